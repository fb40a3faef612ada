"""Loads a `BertPretrainer` (encoder and, where present, its heads) from Google or Hugging Face checkpoints, and
writes Hugging Face `BertForPreTraining` directories."""

import logging

from official_bert.checkpoints.heads import masked_lm_specs, next_sentence_specs
from official_bert.checkpoints.loading import load_task_weights, restore
from official_bert.checkpoints.readers import open_checkpoint
from official_bert.checkpoints.task_models import save_task_model

logger = logging.getLogger(__name__)


def load_pretrainer_weights(pretrainer, path):
    """Loads a `BertPretrainer`'s encoder and, where the checkpoint has them, its heads.

    The encoder must load completely. Each head (masked LM, next sentence) loads only if all its variables are in
    the checkpoint; otherwise it keeps its fresh initialisation and a note is logged (all-MiniLM-L6-v2, a
    `BertModel`, has neither; a `BertForMaskedLM` has no NSP head, and no pooler, which then starts fresh too).
    A masked-LM head of other shapes (another vocab) starts fresh too, logged; a next-sentence head of another
    shape is an error.

    Args:
        pretrainer: a `BertPretrainer`.
        path: a Hugging Face directory (`BertForPreTraining`, `BertForMaskedLM` or `BertModel`), a Google
            directory or checkpoint prefix (`bert/*`, `cls/*`), or a `save_pretrainer` directory.
    Returns: dict `{"masked_lm": loaded?, "next_sentence": loaded?}`.
    """
    reader = open_checkpoint(path)
    bias_names = pretrainer.encoder.config.family.hf_masked_lm_bias
    bias_name = bias_names[0]
    if reader.format == "hf":
        bias_name = next((name for name in bias_names if name in reader), bias_name)
    nsp_specs = next_sentence_specs(pretrainer) if pretrainer.next_sentence is not None else []
    has_nsp = bool(nsp_specs) and all(spec.name(reader.format) in reader for spec in nsp_specs)
    # Without the NSP head the pooler (its only user) may be missing too, as in HF's BertForMaskedLM.
    loaded = {"masked_lm": load_task_weights(pretrainer.encoder, masked_lm_specs(pretrainer, bias_name), path,
                                             optional_pooler=not has_nsp, what="masked-LM head"),
              "next_sentence": has_nsp}
    if has_nsp:
        restore(nsp_specs, reader)
    elif pretrainer.next_sentence is not None:  # (a pre-trainer without one, objective "mlm": nothing to say)
        logger.info("%s: no next-sentence head in the checkpoint; it starts from a fresh initialisation",
                    reader.path)
    return loaded


def save_pretrainer(pretrainer, path, vocab_file=None, overwrite=False):
    """Writes a Hugging Face `BertForPreTraining` directory (`config.json` + `model.safetensors`, encoder weights
    under `bert.`, heads under `cls.`), which transformers and `load_pretrainer_weights` load; for RoBERTa and
    DistilBERT their `*ForMaskedLM` (encoder under `roberta.` / `distilbert.`, the masked-LM head only), for ALBERT
    an `AlbertForPreTraining` (encoder under `albert.`, heads `predictions.*`, `sop_classifier.*`), and for a
    BERT or ALBERT pre-trainer without a sentence head (objective "mlm") a `BertForMaskedLM` / `AlbertForMaskedLM`
    (the masked LMs without the pooler, as transformers' classes).

    Args:
        pretrainer: a `BertPretrainer`.
        path: output directory (created).
        vocab_file: copied in as `vocab.txt` when given.
        overwrite: replace an existing `model.safetensors` there; otherwise that is an error.
    """
    return save_task_model(pretrainer, path, vocab_file, overwrite=overwrite)
