"""FeatureExtractor: a frozen BERT's per-layer vectors of raw text, or of the first piece of each word.

The BERT paper's feature-based approach (Section 5.3): the encoder is not fine-tuned; its layers feed another
model. Layers are numbered as the encoder's outputs plus the embeddings: with L transformer blocks, index 0 is
the embedding output (after its LayerNorm), 1..L the blocks; negative indices count from the last block, as
Google's `extract_features.py` numbers them (-1 = last block, -L = first block, -(L+1) = embeddings).

Examples:

>>> extractor = FeatureExtractor.from_pretrained("../shared/data/all-MiniLM-L6-v2", layers=[-1, -2])
>>> [example] = extractor.extract(["Hello world!"])
>>> example.tokens, example.values.shape  # (tokens, layers, hidden)
(['[CLS]', 'hello', 'world', '!', '[SEP]'], (5, 2, 384))
"""

import dataclasses
import logging
from typing import Iterable, Iterator, List, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf

from official_bert.families import check_sequence_length
from official_bert.pipelines.embedder import pack_texts
from official_bert.text import BertPackInputs
from official_bert.text.vocab import is_suffix_piece
from official_bert.tokenizer_kinds import DESCRIPTIONS, WORDPIECE

logger = logging.getLogger(__name__)

POOLINGS = ("none", "cls", "mean", "first_subtoken")
COMBINES = ("none", "concat", "sum", "mean")


@dataclasses.dataclass
class TextFeatures:
    """The features of one example.

    Args:
        tokens: the word pieces the rows belong to (`[CLS]` for "cls" pooling; none for "mean").
        values: float32 (tokens, layers, hidden); (layers, hidden) when pooled to one vector; the layer
            axis is gone (its width is `layers * hidden` for "concat") when layers are combined.
        truncated: some piece did not fit in `seq_length`.
    """

    tokens: List[str]
    values: np.ndarray
    truncated: bool


def layer_model(encoder) -> keras.Model:
    """A model from the encoder's inputs to `[embeddings, layer 1, ..., layer L]` outputs (batch, seq, hidden).

    ALBERT's "embeddings" are those projected to the hidden size, as transformers' `hidden_states[0]`."""
    embeddings = encoder.embedding_projection or encoder.embeddings
    return keras.Model(encoder.inputs, [embeddings.output] + list(encoder.output["encoder_outputs"]))


def resolve_layers(layers: Sequence[int], num_layers: int) -> List[int]:
    """Positions in `[embeddings, block 1..L]` of layer indices (see the module notes).

    Raises:
        ValueError: an index outside [-(L+1), L], naming it and the model's depth; two indices of one layer (e.g. -1
            and 6 of a 6-layer model), naming both.
    """
    if not layers:
        raise ValueError("no layers given")
    positions, spelled = [], {}
    for index in layers:
        if not -(num_layers + 1) <= index <= num_layers:
            raise ValueError(f"layer index {index} is out of range for a {num_layers}-layer model: use 0 (embeddings) "
                             f"to {num_layers}, or -1 (last) to {-(num_layers + 1)} (embeddings)")
        position = index if index >= 0 else num_layers + 1 + index
        if position in spelled:
            twice = (f"layer index {index} is given twice" if spelled[position] == index else
                     f"layer indices {spelled[position]} and {index} both name layer {position} of a "
                     f"{num_layers}-layer model (0 = embeddings, -1 = the last block)")
            raise ValueError(f"{twice}; name each layer once")
        spelled[position] = index
        positions.append(position)
    return positions


def combine_layers(values: np.ndarray, combine: str) -> np.ndarray:
    """Combines the layer axis (second to last) of `values` (..., layers, hidden): "none" keeps it."""
    if combine == "none":
        return values
    if combine == "concat":
        return values.reshape(values.shape[:-2] + (-1,))
    if combine == "sum":
        return values.sum(axis=-2)
    if combine == "mean":
        return values.mean(axis=-2)
    raise ValueError(f"combine must be one of {', '.join(COMBINES)}, got {combine!r}")


def batched(items: Iterable, size: int) -> Iterator[list]:
    """Lists of `size` consecutive items (the last one shorter); consumes `items` lazily."""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class FeatureExtractor:
    """Per-layer features of a frozen `BertEncoder`.

    Args:
        encoder: a `BertEncoder` with its weights.
        tokenizer: its `BertTokenizer` (or `BytePairTokenizer` for RoBERTa, packed `<s> A </s></s> B </s>`).
        layers: layer indices (see the module notes), e.g. [-1, -2, -3, -4].
        seq_length: packed length; longer texts are cut (longest segment first) and flagged `truncated`.
        batch_size: examples per encoder call.
        pooling: "none" (every piece, as Google's script), "cls" ([CLS]), "mean" (mean over the real pieces,
            [CLS] and [SEP] included, as sentence-transformers), "first_subtoken" (the first piece of each word,
            special tokens left out; WordPiece only: a byte-level BPE marks no word continuations).
        combine: "none" (each layer apart), "concat", "sum" or "mean" of the chosen layers.
    """

    def __init__(self, encoder, tokenizer, layers: Sequence[int] = (-1, -2, -3, -4), seq_length: int = 128,
                 batch_size: int = 32, pooling: str = "none", combine: str = "none"):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {', '.join(COMBINES)}, got {combine!r}")
        config = encoder.config
        check_sequence_length(seq_length, config, "seq_length")
        self.layers = [int(i) for i in layers]
        self.positions = resolve_layers(self.layers, config.num_hidden_layers)
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.batch_size = int(batch_size)
        self.pooling = pooling
        self.combine = combine
        layout = config.packing_layout
        if pooling == "first_subtoken" and config.tokenizer_kind != WORDPIECE:
            raise ValueError(f"pooling='first_subtoken' needs WordPiece's '##' pieces; a {config.model_type} "
                             f"{DESCRIPTIONS[config.tokenizer_kind]} does not mark word continuations that way: use none, cls or mean")
        self._tokens = tokenizer.get_vocab()
        self._is_suffix = is_suffix_piece([t or "" for t in self._tokens])
        self._packer = BertPackInputs(self.seq_length, tokenizer.get_special_tokens_dict(), layout=layout)
        model = layer_model(encoder)
        positions = list(self.positions)

        def run(inputs):  # -> (batch, seq, layers, hidden)
            outputs = model(inputs, training=False)
            return tf.stack([outputs[p] for p in positions], axis=2)

        self._run = tf.function(run, reduce_retracing=True, autograph=False)

    @classmethod
    def from_pretrained(cls, path, lower_case: Optional[bool] = None, **kwargs) -> "FeatureExtractor":
        """Loads a Hugging Face / Google BERT directory or a model_dir of ours; `kwargs` as the constructor."""
        from official_bert.pipelines.loading import load_encoder_and_tokenizer

        encoder, tokenizer = load_encoder_and_tokenizer(path, lower_case)
        return cls(encoder, tokenizer, **kwargs)

    def layer_values(self, inputs) -> np.ndarray:
        """Float32 (batch, seq, layers, hidden) of packed encoder inputs (dict of int32 (batch, seq) arrays)."""
        return self._run({k: tf.constant(v, tf.int32) for k, v in inputs.items()}).numpy()

    def _pool(self, ids, mask, values):
        """One example's (tokens, vectors) from its ids, mask and (seq, layers, hidden) values."""
        real = int(mask.sum())
        ids, values = ids[:real], values[:real]
        if self.pooling == "cls":
            return [self._tokens[ids[0]]], values[0]
        if self.pooling == "mean":
            return [], values.mean(axis=0)
        if self.pooling == "first_subtoken":
            special = {self.tokenizer.get_special_tokens_dict()[k] for k in ("start_of_sequence_id",
                                                                            "end_of_segment_id")}
            keep = [i for i, piece in enumerate(ids) if piece not in special and not self._is_suffix[piece]]
            return [self._tokens[ids[i]] for i in keep], values[keep]
        return [self._tokens[i] for i in ids], values

    def extract(self, texts: Sequence[str], text_b: Optional[Sequence[str]] = None) -> List[TextFeatures]:
        """The features of one batch of texts (or pairs), in order."""
        inputs, truncated = pack_texts(self.tokenizer, self._packer, texts, text_b)
        values = self.layer_values(inputs)  # (batch, seq, layers, hidden)
        result = []
        for row in range(len(texts)):
            tokens, vectors = self._pool(inputs["input_word_ids"][row], inputs["input_mask"][row], values[row])
            result.append(TextFeatures(tokens, combine_layers(vectors, self.combine), bool(truncated[row])))
        return result

    def extract_stream(self, examples: Iterable, log_every: int = 1000) -> Iterator[TextFeatures]:
        """Features of a stream of `(text, text_b or None)` examples, read and computed a batch at a time."""
        done = 0
        for batch in batched(examples, self.batch_size):
            firsts = [a for a, _ in batch]
            seconds = [b for _, b in batch]
            if all(b is None for b in seconds):
                yield from self.extract(firsts)
            elif all(b is not None for b in seconds):
                yield from self.extract(firsts, seconds)
            else:  # a batch mixing single texts and pairs: each kind packs apart, in order
                for a, b in batch:
                    yield from self.extract([a], None if b is None else [b])
            previous, done = done, done + len(batch)
            if done // log_every > previous // log_every:
                logger.info("extracted features of %d examples", done)

    def word_features(self, pieces: Sequence[Sequence[Sequence[int]]], out: Optional[np.ndarray] = None) -> np.ndarray:
        """The features of the first piece of every word of pre-split sentences, for a frozen-feature tagger.

        Sentences are windowed as in fine-tuning (`official_bert.data.tagging_dataset.build_windows`), a batch of
        windows at a time, so memory holds one batch beside `out`.

        Args:
            pieces: `[sentence][word] -> [piece ids]`, from `tagging_dataset.word_pieces`.
            out: float32 (total words, layers, hidden) array to fill (e.g. an `np.lib.format.open_memmap`);
                allocated when None.
        Returns: `out`: row `offsets[s] + w` is word w of sentence s (offsets = cumulative word counts).
        """
        from official_bert.data.tagging_dataset import build_windows

        num_words = np.array([len(words) for words in pieces], np.int64)
        offsets = np.concatenate([[0], np.cumsum(num_words)])
        shape = (int(offsets[-1]), len(self.positions), self.encoder.config.hidden_size)
        if out is None:
            out = np.zeros(shape, np.float32)
        elif tuple(out.shape) != shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, expected {shape}")
        windows = build_windows(pieces, self.seq_length, self.tokenizer.get_special_tokens_dict())
        order = np.argsort(windows.inputs["input_mask"].sum(axis=1), kind="stable")  # similar lengths batch together
        for count, start in enumerate(range(0, len(order), self.batch_size)):
            rows = order[start:start + self.batch_size]
            length = int(windows.inputs["input_mask"][rows].sum(axis=1).max())
            values = self.layer_values({k: v[rows, :length] for k, v in windows.inputs.items()})
            where = windows.word_index[rows, :length]  # (batch, length): word index at first pieces, else -1
            batch_rows, positions = np.nonzero(where >= 0)
            targets = offsets[windows.sentence[rows][batch_rows]] + where[batch_rows, positions]
            out[targets] = values[batch_rows, positions]
            if count % 50 == 0:
                logger.info("word features: %d / %d windows", min(start + len(rows), len(order)), len(order))
        return out
