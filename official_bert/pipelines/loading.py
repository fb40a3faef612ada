"""Loads an encoder and the tokenizer that belongs to it, from any checkpoint the library reads."""

from official_bert.checkpoints import load_encoder
from official_bert.model_dir import resolve_init_checkpoint
from official_bert.text.preprocessing import find_family_vocab, resolve_casing, tokenizer_of
from official_bert.tokenizer_kinds import BPE


def load_encoder_and_tokenizer(path, lower_case=None):
    """A `BertEncoder` with its weights and its tokenizer (`BertTokenizer`, RoBERTa's `BytePairTokenizer` or
    ALBERT's `SentencepieceTokenizer`).

    Args:
        path: a Hugging Face or Google BERT directory, or a model_dir of ours (its `encoder/`).
        lower_case: overrides the casing found beside the checkpoint (uncased when unknown).
    Returns: `(encoder, tokenizer)`.
    Raises:
        ValueError: the vocabulary is larger than the config's vocab_size; `lower_case` given for a RoBERTa
            checkpoint (its byte-level BPE keeps case); another family without an in-graph tokenizer here.
        FileNotFoundError: no checkpoint, config or vocabulary there.
    """
    path = resolve_init_checkpoint(str(path))
    encoder, config = load_encoder(path)
    if config.tokenizer_kind == BPE and lower_case is not None:
        raise ValueError(f"{path}: a {config.model_type} checkpoint, whose byte-level BPE keeps case; leave "
                         "do_lower_case / lower_case unset")
    vocab, found_lower, source = find_family_vocab(path, config.model_type, config.vocab_size)
    return encoder, tokenizer_of(vocab, resolve_casing(found_lower if lower_case is None else lower_case, source))
