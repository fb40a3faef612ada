"""Embedder: raw text in, sentence embeddings out, as sentence-transformers computes them.

Each text (or `text ||| text_b` pair, packed `[CLS] a [SEP] b [SEP]`) goes through the in-graph tokenizer and
packer, the encoder's last layer is averaged over the real tokens ([CLS] and [SEP] included, padding left out:
sentence-transformers' mean pooling) and, by default, L2-normalised: what `SentenceTransformer("all-MiniLM-L6-v2")
.encode(texts)` returns. The exported encoder's `embed` signature computes the same in the serving graph
(`export.encoder_module`).

Examples:

>>> embedder = Embedder.from_pretrained("../shared/data/all-MiniLM-L6-v2")
>>> vectors = embedder(["A man is eating food.", "A man is eating a piece of bread."])
>>> vectors.shape, float(vectors[0] @ vectors[1])
((2, 384), 0.7553...)
"""

import json
import os
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from official_bert.families import check_sequence_length
from official_bert.models.text_inputs import check_all_texts
from official_bert.text import BertPackInputs
from official_bert.text.preprocessing import warn_truncated

DEFAULT_SEQ_LENGTH = 128


def masked_mean(sequence_output, input_mask):
    """Mean of the real tokens' vectors: float [batch, seq, hidden], int [batch, seq] -> [batch, hidden]."""
    mask = tf.cast(input_mask, sequence_output.dtype)[:, :, None]  # (batch, seq, 1)
    summed = tf.reduce_sum(sequence_output * mask, axis=1)  # (batch, hidden)
    return summed / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)  # clamped as sentence-transformers does


def pack_texts(tokenizer, packer, texts, text_b=None):
    """Tokenizes and packs a batch: `(inputs, truncated)`, the encoder's dict of int32 numpy arrays cut to the
    longest real row, and a bool [batch] array, True where some piece did not fit."""
    segments = [tokenizer(tf.constant(list(texts), tf.string))]
    if text_b is not None:
        segments.append(tokenizer(tf.constant(list(text_b), tf.string)))
    inputs = {k: v.numpy() for k, v in packer(segments).items()}
    length = max(int(inputs["input_mask"].sum(axis=1).max()), 1)
    return {k: v[:, :length] for k, v in inputs.items()}, packer.truncated(segments).numpy()


class Embedder:
    """Mean-pooled (optionally L2-normalised) sentence embeddings of raw text, with a `BertEncoder`.

    Args:
        encoder: a `BertEncoder` with its weights.
        tokenizer: its `BertTokenizer`.
        seq_length: longer texts are cut (longest segment first), as sentence-transformers' `max_seq_length`.
        batch_size: texts per encoder call.
        normalize: L2-normalise the vectors (sentence-transformers' `Normalize` module).
    """

    def __init__(self, encoder, tokenizer, seq_length: int = DEFAULT_SEQ_LENGTH, batch_size: int = 32,
                 normalize: bool = True):
        check_sequence_length(seq_length, encoder.config, "seq_length")
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.batch_size = int(batch_size)
        self.normalize = bool(normalize)
        self._packer = BertPackInputs(self.seq_length, tokenizer.get_special_tokens_dict(),
                                      layout=encoder.config.packing_layout)  # <s> A </s> for RoBERTa
        self._embed = tf.function(self._embed_tokens, reduce_retracing=True, autograph=False)

    @classmethod
    def from_pretrained(cls, path, seq_length: Optional[int] = None, batch_size: int = 32, normalize: bool = True,
                        lower_case: Optional[bool] = None) -> "Embedder":
        """Loads a Hugging Face / Google BERT directory or a model_dir of ours.

        `seq_length` defaults to the directory's `sentence_bert_config.json` `max_seq_length` (256 for
        all-MiniLM-L6-v2), else 128 (at most the model's `max_sequence_length`).
        """
        from official_bert.pipelines.loading import load_encoder_and_tokenizer

        encoder, tokenizer = load_encoder_and_tokenizer(path, lower_case)
        sentence_config = os.path.join(str(path), "sentence_bert_config.json")
        if seq_length is None and os.path.isfile(sentence_config):
            with open(sentence_config, encoding="utf-8") as f:
                seq_length = json.load(f).get("max_seq_length")
        seq_length = seq_length or min(DEFAULT_SEQ_LENGTH, encoder.config.max_sequence_length)
        return cls(encoder, tokenizer, seq_length, batch_size, normalize)

    def _embed_tokens(self, inputs):
        outputs = self.encoder(inputs, training=False)
        embedding = masked_mean(outputs["sequence_output"], inputs["input_mask"])  # (batch, hidden)
        return tf.math.l2_normalize(embedding, axis=-1) if self.normalize else embedding

    def __call__(self, texts: Sequence[str], text_b: Optional[Sequence[str]] = None) -> np.ndarray:
        """Float32 [len(texts), hidden] embeddings; `text_b` (same length) embeds pairs packed together."""
        if isinstance(texts, str):
            raise TypeError("pass a list of texts")
        texts = list(texts)
        check_all_texts(texts)
        if text_b is not None:
            check_all_texts(text_b, "text_b")
        if text_b is not None and len(text_b) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(text_b)} text_b")
        hidden = self.encoder.config.hidden_size
        vectors, cut = [np.zeros((0, hidden), np.float32)], 0
        for start in range(0, len(texts), self.batch_size):
            end = start + self.batch_size
            inputs, truncated = pack_texts(self.tokenizer, self._packer, texts[start:end],
                                           None if text_b is None else list(text_b)[start:end])
            cut += int(truncated.sum())
            vectors.append(self._embed({k: tf.constant(v) for k, v in inputs.items()}).numpy())
        warn_truncated(cut, len(texts), "texts", f"seq_length={self.seq_length}")  # (sentence-transformers: unsaid)
        return np.concatenate(vectors)
