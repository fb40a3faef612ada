"""TextPreprocessor: raw strings -> packed encoder inputs, in-graph (training pipelines and serving graphs alike).

Strings go through `BertTokenizer` (tf-text's `FastBertNormalize` + `FastWordpieceTokenizeWithOffsets`) and
`BertPackInputs` (dense core ops), so the same graph feeds `tf.data` in training and the exported
signatures: no training/serving skew. Texts whose pieces do not fit are cut longest-segment-first and
flagged in `truncated`: nothing is cut silently.
"""

import tensorflow as tf

from official_bert.text.pack_inputs import BertPackInputs
from official_bert.text.tokenizer import BertTokenizer


class TextPreprocessor(tf.Module):
    """Tokenizes and packs one or two batches of raw strings, in-graph.

    Args:
        vocab_file: the model's `vocab.txt`.
        lower_case: True for uncased models.
        seq_length: the packed length, [CLS] and [SEP]s included.
        name: module name.

    Examples:

    >>> preprocessor = TextPreprocessor("vocab.txt", True, 128)
    >>> inputs, truncated = preprocessor.pack([tf.constant(["The cat sat."])])
    >>> inputs["input_word_ids"].shape, truncated.numpy()
    (TensorShape([1, 128]), array([False]))
    """

    def __init__(self, vocab_file, lower_case, seq_length, name=None):
        super().__init__(name=name)
        self.vocab_file = str(vocab_file)
        self.lower_case = bool(lower_case)
        self.seq_length = int(seq_length)
        self.tokenizer = BertTokenizer(vocab_file=self.vocab_file, lower_case=self.lower_case)
        self.special_tokens = self.tokenizer.get_special_tokens_dict()
        self.packer = BertPackInputs(self.seq_length, self.special_tokens)

    def tokenize(self, text, with_offsets=False):
        """`BertTokenizer` on a [batch] string Tensor: int32 ids [batch, (pieces)] (and int64 byte offsets)."""
        return self.tokenizer(text, with_offsets=with_offsets)

    def pack_tokens(self, segments):
        """Packs tokenized segments.

        Args:
            segments: one or two int32 RaggedTensors [batch, (pieces)].

        Returns:
            `(inputs, truncated)`: the encoder's dict of int32 [batch, seq_length] Tensors, and a bool
            [batch] Tensor, True where some piece did not fit.
        """
        return self.packer(list(segments)), self.packer.truncated(segments)

    def pack(self, texts):
        """Tokenizes and packs raw strings.

        Args:
            texts: a list of one or two [batch] string Tensors (e.g. `text`, `text_b`).

        Returns:
            `(inputs, truncated)` as `pack_tokens`.
        """
        return self.pack_tokens([self.tokenize(t) for t in texts])
