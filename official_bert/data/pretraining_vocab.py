"""What the pre-training recipe reads: a vocabulary's special ids and continuation pieces (`MaskingVocab`) and
documents tokenized in large batches (`tokenize_documents`)."""

import dataclasses

import numpy as np

from official_bert.text.vocab import is_sentencepiece_continuation, is_suffix_piece


@dataclasses.dataclass(frozen=True)
class MaskingVocab:
    """The ids the recipe needs: special tokens, vocabulary size and which ids continue a word (`##` pieces).

    Args:
        vocab_size: number of ids; random replacements are drawn uniformly from [0, vocab_size).
        cls_id, sep_id, mask_id, pad_id: ids of [CLS], [SEP], [MASK], [PAD] (ALBERT's SentencePiece: <pad>).
        suffix_ids: frozenset of the ids of continuation pieces (for whole-word masking): WordPiece's `##`
            pieces, or the SentencePiece pieces `is_sentencepiece_continuation` finds (none for RoBERTa's BPE).
        layout: how pairs are packed: "bert" (`[CLS] A [SEP] B [SEP]`, type ids 0 then 1) or "roberta"
            (`<s> A </s></s> B </s>`, type ids 0).
    """

    vocab_size: int
    cls_id: int
    sep_id: int
    mask_id: int
    pad_id: int
    suffix_ids: frozenset
    layout: str = "bert"

    @classmethod
    def from_tokens(cls, tokens, sentencepiece=False):
        """Builds it from a vocabulary list (index = id), as in `vocab.txt`.

        Args:
            tokens: the vocabulary.
            sentencepiece: the pieces of an ALBERT `spiece.model` (padding `<pad>`, words start with "▁").
        """
        index = {}
        for i, token in enumerate(tokens):
            index.setdefault(token, i)
        pad = "<pad>" if sentencepiece else "[PAD]"
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]", pad) if t not in index]
        if missing:
            raise ValueError(f"vocabulary lacks {', '.join(missing)}, needed for pre-training data")
        continuation = is_sentencepiece_continuation(tokens) if sentencepiece else is_suffix_piece(tokens)
        suffix = frozenset(np.flatnonzero(continuation).tolist())
        return cls(len(tokens), index["[CLS]"], index["[SEP]"], index["[MASK]"], index[pad], suffix)

    @classmethod
    def from_tokenizer(cls, tokenizer):
        """Builds it from an `official_bert.text.BertTokenizer`, ALBERT's `SentencepieceTokenizer` or RoBERTa's
        `BytePairTokenizer` (its `<s>`, `</s>`, `<mask>`, `<pad>`; no whole words; the "roberta" layout)."""
        from official_bert.text.bpe_tokenizer import BytePairTokenizer
        from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

        if isinstance(tokenizer, BytePairTokenizer):
            special = tokenizer.get_special_tokens_dict()
            if "mask_id" not in special:
                raise ValueError("vocabulary lacks <mask>, needed for pre-training data")
            return cls(special["vocab_size"], special["start_of_sequence_id"], special["end_of_segment_id"],
                       special["mask_id"], special["padding_id"], frozenset(), layout="roberta")
        return cls.from_tokens(tokenizer.get_vocab(), isinstance(tokenizer, SentencepieceTokenizer))

    def is_suffix_table(self):
        """bool array (vocab_size,): True on `##` pieces."""
        table = np.zeros(self.vocab_size, bool)
        table[list(self.suffix_ids)] = True
        return table


def tokenize_documents(tokenizer, documents, batch_size=1024):
    """Tokenizes documents in large batches (see `official_bert.text.dataset.tokenize_dataset`).

    Sentences that give no tokens (e.g. only control characters) are dropped, and then documents with no
    sentence left, as in the original.

    Args:
        tokenizer: a `BertTokenizer` (or ALBERT's `SentencepieceTokenizer`).
        documents: list of documents, each a list of str.
        batch_size: sentences per tokenizer call.

    Returns:
        `(tokenized, num_empty_sentences)`: tokenized is a list of documents, each a list of sentences,
        each a non-empty list of int ids.
    """
    from official_bert.text.dataset import tokenize_dataset

    sentences = [s for document in documents for s in document]
    if not sentences:
        return [], 0
    values, lengths = [], []
    for batch in tokenize_dataset(tokenizer, sentences, batch_size):
        values.append(batch.values.numpy())
        lengths.append(np.diff(batch.row_splits.numpy()))
    values = np.concatenate(values).tolist()
    starts = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).tolist()
    tokenized, sentence, empty = [], 0, 0
    for document in documents:
        pieces = []
        for _ in document:
            begin, end = starts[sentence], starts[sentence + 1]
            sentence += 1
            if end > begin:
                pieces.append(values[begin:end])
            else:
                empty += 1
        if pieces:
            tokenized.append(pieces)
    return tokenized, empty
