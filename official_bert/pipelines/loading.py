"""Loads an encoder and the tokenizer that belongs to it, from any checkpoint the library reads."""

import os

from official_bert.checkpoints import load_encoder
from official_bert.checkpoints.hub import checkpoint_path
from official_bert.model_dir import resolve_init_checkpoint
from official_bert.text.preprocessing import (check_vocab_size, find_family_vocab, read_vocab_file, resolve_casing,
                                              tokenizer_of)
from official_bert.tokenizer_kinds import BPE


def load_encoder_and_tokenizer(path, lower_case=None, vocab_file=None):
    """A `BertEncoder` with its weights and its tokenizer (`BertTokenizer`, RoBERTa's `BytePairTokenizer` or
    ALBERT's `SentencepieceTokenizer`).

    Args:
        path: a Hugging Face or Google BERT directory, a model_dir of ours (its `encoder/`), or a Hugging Face hub
            id (`checkpoint_path`).
        lower_case: overrides the casing found beside the checkpoint (uncased, with a warning, when unknown).
        vocab_file: the tokenizer's file, instead of the one beside the checkpoint (a `--vocab_file`, of the
            checkpoint's family's kind: `preprocessing.read_vocab_file`).
    Returns: `(encoder, tokenizer)`.
    Raises:
        ValueError: the vocabulary is larger than the config's vocab_size or of another family's kind;
            `lower_case` given for a RoBERTa checkpoint (its byte-level BPE keeps case); another family without an
            in-graph tokenizer here.
        FileNotFoundError: no checkpoint, config or vocabulary there.
    """
    path = resolve_init_checkpoint(checkpoint_path(path))
    if vocab_file is not None and not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"--vocab_file={vocab_file}: no such file")
    encoder, config = load_encoder(path)
    if config.tokenizer_kind == BPE and lower_case is not None:
        raise ValueError(f"{path}: a {config.model_type} checkpoint, whose byte-level BPE keeps case; leave "
                         "do_lower_case / lower_case unset")
    if vocab_file is None:
        vocab, found_lower, source = find_family_vocab(path, config.model_type, config.vocab_size)
    else:
        vocab, found_lower, source = read_vocab_file(vocab_file, config.model_type), None, vocab_file
        check_vocab_size(vocab, config.vocab_size, vocab_file)
    if config.tokenizer_kind == BPE:
        return encoder, tokenizer_of(vocab, False)
    return encoder, tokenizer_of(vocab, resolve_casing(found_lower if lower_case is None else lower_case, source))
