"""Checkpoint loading and writing: Google TF1 and Hugging Face formats."""

from official_bert.checkpoints.google import write_google_checkpoint
from official_bert.checkpoints.heads import head_specs
from official_bert.checkpoints.loading import (encoder_tensors, load_config, load_encoder, load_task_weights, restore,
                                               save_encoder)
from official_bert.checkpoints.pretrainer import load_pretrainer_weights, save_pretrainer
from official_bert.checkpoints.readers import CheckpointReader, open_checkpoint
from official_bert.checkpoints.task_models import hf_label_fields, save_task_model
from official_bert.checkpoints.weight_map import WeightSpec, dense_specs, encoder_specs, layer_norm_specs

__all__ = ["CheckpointReader", "WeightSpec", "dense_specs", "encoder_specs", "encoder_tensors", "head_specs",
           "hf_label_fields", "layer_norm_specs", "load_config", "load_encoder", "load_pretrainer_weights",
           "load_task_weights", "open_checkpoint", "restore", "save_encoder", "save_pretrainer", "save_task_model",
           "write_google_checkpoint"]
