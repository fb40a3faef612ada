"""SentencepieceTokenizer: ALBERT's SentencePiece tokenizer in the graph, equal to transformers' AlbertTokenizerFast.

One tensorflow-text kernel, `FastSentencepieceTokenize` (which TFLite's tf-text registrar has), runs a model
compiled from the `spiece.model` (`sentencepiece_model.py`: ALBERT's normalization in its charsmap, the
user-defined symbols as added tokens); core ops map the extra pieces back to their ids and fuse runs of
`<unk>` as `tokenizers` does; `sentencepiece_offsets.py` maps the pieces back to input bytes. Packed by
`official_bert.text.Preprocessor` (layout "bert": `[CLS] A [SEP] B [SEP]`, type ids 0 then 1, `<pad>` padding), it
gives `AlbertTokenizerFast(a, b, truncation="longest_first", padding="max_length")`'s inputs; the graph runs in
TFLite with tensorflow-text's custom-op registrar (no Flex).
"""

import base64
import functools
import json
import os

import keras
import numpy as np
import tensorflow as tf
from tensorflow_text.python.ops.fast_sentencepiece_tokenizer import gen_fast_sentencepiece_tokenizer

from official_bert.text.eager_constants import eager_constant
from official_bert.text.ragged_ops import row_ids
from official_bert.text.sentencepiece_model import SentencepieceModel
from official_bert.text.sentencepiece_offsets import SentencepieceOffsets

REQUIRED_TOKENS = ("[CLS]", "[SEP]", "<pad>")
MODEL_FILE = "spiece.model"


@functools.lru_cache(maxsize=4)
def _compiled(serialized, lower_case, source):
    model = SentencepieceModel(serialized, source)
    flat_model, kernel = model.compile(lower_case)
    from tensorflow_text.core.pybinds import pywrap_model_converter

    return model, np.frombuffer(pywrap_model_converter.convert_sentencepiece_model(flat_model), np.uint8), kernel


class SentencepieceTokenizer(keras.layers.Layer):
    """Maps strings to ALBERT's SentencePiece ids exactly as `AlbertTokenizerFast` does, inside the graph.

    Normalization as `AlbertTokenizerFast`: "``" and "''" become '"', NFKD, accents stripped, lower
    case (`lower_case`), the model's own charsmap (nmt_nfkc), words split on Unicode whitespace; the
    model's user-defined symbols (ALBERT's `( ) " - . – £ €`) split the raw text as added tokens.
    Literal special tokens in the text ("[SEP]") are tokenized as text, as in `BertTokenizer`;
    `tokenizers`' Unigram still matches "<unk>" and "<pad>" as pieces, and so does this layer.

    Args:
        model_file: path of a `spiece.model`; give this or `model`.
        model: the `spiece.model` bytes (or their base64 text, as `get_config` stores them).
        lower_case: the tokenizer's `do_lower_case` (True for every ALBERT release). Accents are always
            stripped (ALBERT's `keep_accents=False`).
        **kwargs: passed to `keras.layers.Layer`.

    Examples:

    >>> tokenizer = SentencepieceTokenizer(model_file="spiece.model")
    >>> tokenizer(tf.constant(["Hello world!", "A (short) one."]))  # int32 ids [2, (pieces)]
    """

    def __init__(self, model_file=None, model=None, lower_case=True, **kwargs):
        super().__init__(**kwargs)
        if (model_file is None) == (model is None):
            raise ValueError("Give exactly one of model_file and model.")
        if model_file is not None:
            with open(model_file, "rb") as f:
                serialized = f.read()
            source = str(model_file)
        else:
            serialized = base64.b64decode(model) if isinstance(model, str) else bytes(model)
            source = "the given SentencePiece model"
        self.model_file = None if model_file is None else str(model_file)
        self.model = None if model_file is not None else base64.b64encode(serialized).decode("ascii")
        self.lower_case = bool(lower_case)
        self._model, flat_model, kernel = _compiled(serialized, self.lower_case, source)
        self._flat_model, self._id_map = eager_constant(flat_model), eager_constant(kernel.id_map)
        missing = [t for t in REQUIRED_TOKENS if t not in self._model.piece_to_id]
        if missing or self._model.unk_id is None:
            missing += [] if self._model.unk_id is not None else ["an unknown piece"]
            raise ValueError(f"{source} lacks {', '.join(missing)}; ALBERT needs [CLS], [SEP], <pad> and <unk>.")
        self._offsets = SentencepieceOffsets(kernel, self._model.unk_id, source)

    @property
    def vocab_size(self):
        return len(self._model.pieces)

    def get_vocab(self):
        """Returns the pieces, a list of str whose index is the id."""
        return list(self._model.pieces)

    def user_defined_symbols(self):
        """The model's user-defined symbols (ALBERT's `( ) " - . – £ €`): pieces that stand alone in the text."""
        return self._model.user_defined_symbols()

    def get_special_tokens_dict(self):
        """Returns the ids BertPackInputs and the pre-training masker need.

        Returns:
            dict with `vocab_size`, `start_of_sequence_id` ([CLS]), `end_of_segment_id` ([SEP]),
            `padding_id` (<pad>), `unk_id` (<unk>) and `mask_id` ([MASK]; absent if the model has none).
        """
        ids = self._model.piece_to_id
        special = {"vocab_size": self.vocab_size, "start_of_sequence_id": ids["[CLS]"],
                   "end_of_segment_id": ids["[SEP]"], "padding_id": ids["<pad>"], "unk_id": self._model.unk_id}
        if "[MASK]" in ids:
            special["mask_id"] = ids["[MASK]"]
        return special

    def call(self, inputs, with_offsets=False):
        """Tokenizes a batch of strings.

        Args:
            inputs: string Tensor, shape [batch] (a scalar is treated as a batch of one).
            with_offsets: also return each piece's byte offsets `[start, end)` in its input string, as
                `AlbertTokenizerFast`'s offsets (which count characters: `ragged_ops.characters_before` converts):
                from the input character of its first normalized character to that of its last (a "▁" alone:
                the first character of its word; '"' from "``": the second backtick).

        Returns:
            int32 RaggedTensor ids [batch, (pieces)]; with `with_offsets`, the tuple `(ids, starts, ends)` where
            starts/ends are int64 RaggedTensors of the same shape.
        """
        text = tf.convert_to_tensor(inputs, dtype=tf.string)
        if text.shape.rank == 0:
            text = tf.reshape(text, [1])
        ids, row_splits = gen_fast_sentencepiece_tokenizer.tf_text_fast_sentencepiece_tokenize(
            self._flat_model, text, 0, 0, False, False, False)  # ids (pieces,), (batch + 1,)
        row_splits = tf.cast(row_splits, tf.int64)
        num_ids = tf.shape(ids, out_type=tf.int64)[0]
        rows = row_ids(row_splits, num_ids)  # (pieces,)
        if with_offsets:
            starts, ends = self._offsets(text, ids, row_splits, rows)  # (pieces,) each
        ids = tf.gather(self._id_map, ids)  # extra pieces -> the ids they stand for
        # tokenizers fuses consecutive <unk>s of a word, whatever made them (an unknown character or a
        # literal "<unk>" piece); the kernel fuses only the first kind. No word starts with <unk> ("▁").
        is_unk = tf.equal(ids, self._model.unk_id)
        repeat = tf.logical_and(tf.logical_and(is_unk[1:], is_unk[:-1]), tf.equal(rows[1:], rows[:-1]))
        keep = tf.logical_not(tf.concat([tf.zeros([1], tf.bool), repeat], axis=0)[:num_ids])  # (pieces,)
        kept_before = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(tf.cast(keep, tf.int64))], axis=0)
        kept = tf.reshape(tf.where(keep), [-1])  # (kept pieces,)
        kept_splits = tf.gather(kept_before, row_splits)
        result = tf.RaggedTensor.from_row_splits(tf.gather(ids, kept), kept_splits, validate=False)
        if not with_offsets:
            return result
        run_last = tf.concat([kept[1:], [num_ids]], axis=0) - 1  # a fused run ends where the next kept piece starts
        ragged = lambda offsets: tf.RaggedTensor.from_row_splits(offsets, kept_splits, validate=False)  # noqa: E731
        return result, ragged(tf.gather(starts, kept)), ragged(tf.gather(ends, run_last))

    def get_config(self):
        config = super().get_config()
        config.update({"model_file": self.model_file, "model": self.model, "lower_case": self.lower_case})
        return config


def load_sentencepiece_tokenizer(directory):
    """The tokenizer of an ALBERT directory: its `spiece.model` and, if any, `tokenizer_config.json`.

    Args:
        directory: a transformers ALBERT directory, or any directory holding `spiece.model`.

    Returns:
        A `SentencepieceTokenizer` (pack it with layout "bert").

    Raises:
        FileNotFoundError: no `spiece.model`; ValueError: `keep_accents` is true (named with the file).
    """
    model_file = os.path.join(directory, MODEL_FILE)
    if not os.path.isfile(model_file):
        raise FileNotFoundError(f"{directory}: no {MODEL_FILE} (ALBERT's SentencePiece model)")
    return SentencepieceTokenizer(model_file=model_file, lower_case=sentencepiece_lower_case(directory))


def sentencepiece_lower_case(directory) -> bool:
    """ALBERT's casing: `tokenizer_config.json`'s `do_lower_case` in `directory`, true when absent (as
    `AlbertTokenizerFast`'s default).

    Raises:
        ValueError: `keep_accents` is true (named with the file).
    """
    config_file = os.path.join(directory, "tokenizer_config.json")
    if not os.path.isfile(config_file):
        return True
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    if config.get("keep_accents", False):
        raise ValueError(f"{config_file}: keep_accents=true is not supported (every ALBERT release strips accents)")
    return bool(config.get("do_lower_case", True))
