"""Checkpoint loading and writing: Google TF1 and Hugging Face formats."""

from official_bert.checkpoints.google import write_google_checkpoint
from official_bert.checkpoints.loading import (encoder_tensors, load_config, load_encoder, load_task_weights, restore,
                                               save_encoder)
from official_bert.checkpoints.readers import CheckpointReader, open_checkpoint
from official_bert.checkpoints.weight_map import WeightSpec, dense_specs, encoder_specs, layer_norm_specs

__all__ = ["CheckpointReader", "WeightSpec", "dense_specs", "encoder_specs", "encoder_tensors", "layer_norm_specs",
           "load_config", "load_encoder", "load_task_weights", "open_checkpoint", "restore", "save_encoder",
           "write_google_checkpoint"]
