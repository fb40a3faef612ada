"""Loads an encoder and the tokenizer that belongs to it, from any checkpoint the library reads."""

import logging

from official_bert.checkpoints import load_encoder
from official_bert.checkpoints.vocab import find_vocab
from official_bert.model_dir import resolve_init_checkpoint
from official_bert.text import BertTokenizer
from official_bert.text.preprocessing import load_tokenizer
from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

logger = logging.getLogger(__name__)


def load_encoder_and_tokenizer(path, lower_case=None):
    """A `BertEncoder` with its weights and its tokenizer (`BertTokenizer`, RoBERTa's `BytePairTokenizer` or
    ALBERT's `SentencepieceTokenizer`).

    Args:
        path: a Hugging Face or Google BERT directory, or a model_dir of ours (its `encoder/`).
        lower_case: overrides the casing found beside the checkpoint (uncased when unknown).
    Returns: `(encoder, tokenizer)`.
    Raises:
        ValueError: the vocabulary's size differs from the config's; `lower_case` given for a RoBERTa checkpoint (its
            byte-level BPE keeps case); another family without an in-graph tokenizer here.
        FileNotFoundError: no checkpoint, config or vocabulary there.
    """
    path = resolve_init_checkpoint(str(path))
    encoder, config = load_encoder(path)
    if config.is_roberta and lower_case is not None:
        raise ValueError(f"{path}: a {config.model_type} checkpoint, whose byte-level BPE keeps case; leave "
                         "do_lower_case / lower_case unset")
    if config.is_roberta or config.is_albert:
        tokenizer, _ = load_tokenizer(path, config.model_type)  # raises for XLM-RoBERTa (SentencePiece)
        if lower_case is not None:  # ALBERT: the caller's casing over tokenizer_config.json's
            tokenizer = SentencepieceTokenizer(model_file=tokenizer.model_file, lower_case=lower_case)
        if tokenizer.vocab_size != config.vocab_size:
            raise ValueError(f"{path}: the {config.model_type} tokenizer has {tokenizer.vocab_size} tokens, but the "
                             f"config has vocab_size={config.vocab_size}")
        return encoder, tokenizer
    tokens, found_lower, source = find_vocab(path)
    if len(tokens) != config.vocab_size:
        raise ValueError(f"{source}: {len(tokens)} tokens, but the config has vocab_size={config.vocab_size}")
    if lower_case is None:
        lower_case = True if found_lower is None else found_lower
        if found_lower is None:
            logger.warning("Casing of %s unknown; lower-casing", source)
    return encoder, BertTokenizer(vocab=tokens, lower_case=lower_case)
