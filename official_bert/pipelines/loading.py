"""Loads an encoder and the tokenizer that belongs to it, from any checkpoint the library reads."""

import logging

from official_bert.checkpoints import load_encoder
from official_bert.checkpoints.vocab import find_vocab
from official_bert.model_dir import resolve_init_checkpoint
from official_bert.text import BertTokenizer

logger = logging.getLogger(__name__)


def load_encoder_and_tokenizer(path, lower_case=None):
    """A `BertEncoder` with its weights and its `BertTokenizer`.

    Args:
        path: a Hugging Face or Google BERT directory, or a model_dir of ours (its `encoder/`).
        lower_case: overrides the casing found beside the checkpoint (uncased when unknown).
    Returns: `(encoder, tokenizer)`.
    Raises:
        ValueError: the vocabulary's size differs from the config's, or a RoBERTa checkpoint (byte-level BPE).
        FileNotFoundError: no checkpoint, config or vocabulary there.
    """
    path = resolve_init_checkpoint(str(path))
    encoder, config = load_encoder(path)
    if config.is_roberta:
        raise ValueError(f"{path}: a {config.model_type} checkpoint; the pipelines (feature extraction, embedding, "
                         "tagging) handle WordPiece pieces, and RoBERTa's byte-level BPE is not supported by them "
                         "yet")
    tokens, found_lower, source = find_vocab(path)
    if len(tokens) != config.vocab_size:
        raise ValueError(f"{source}: {len(tokens)} tokens, but the config has vocab_size={config.vocab_size}")
    if lower_case is None:
        lower_case = True if found_lower is None else found_lower
        if found_lower is None:
            logger.warning("Casing of %s unknown; lower-casing", source)
    return encoder, BertTokenizer(vocab=tokens, lower_case=lower_case)
