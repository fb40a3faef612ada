"""MaskedLMModule: text with `[MASK]` markers -> the top-k word pieces for each mask, in-graph.

The tokenizer treats a literal "[MASK]" in the text as text (as Google's original does: "[", "mask", "]"),
so `MaskedTextPreprocessor` finds the marker in-graph, with dense core ops, and puts the `[MASK]` id in its
place: a marker is a run of pieces that are the pieces of "[MASK]" itself and together span 6 bytes of the
input (no space or other character inside). For uncased models the case of the letters does not matter
("[mask]" is a mask too: the model cannot tell them apart); "[ MASK ]" is text. Pieces are then packed as
`[CLS] pieces [SEP]` (the pre-training layout, one segment), and pieces past `seq_length - 2` are cut:
masks there get no prediction and `truncated` says so.

Each mask is scored by `BertPretrainer`'s masked-LM head (the transform + the tied word-embedding decoder),
and the k highest logits are reported with their softmax probabilities over the whole vocab (ties go to the
lower id, as a stable sort). Every signature, `serve_tokens` included, converts to TFLite as it is.

RoBERTa and ALBERT: `MaskedPartsPreprocessor` finds the marker (`<mask>`, `[MASK]`) as their fast tokenizers find
an added special token, cutting the text at each marker and tokenizing each part alone ("is <mask>." ->
`Ġis <mask> .`; "is [MASK]." -> `▁is [MASK] .`), and packs as the family does. Cutting the text needs
`StringSplitV2`, `RaggedGather` and `DenseBincount`, which LiteRT lacks (as it lacks the BPE's string ops), so
these two exports have no TFLite form: `export.tflite` names the missing ops.
"""

import tensorflow as tf

from export.serving_module import ServingModule
from export.traced_once import TracedOnce
from official_bert.data.padding import trim_inputs
from official_bert.text.preprocessing import Preprocessor
from official_bert.text.tokenizer import BertTokenizer
from official_bert.text.ragged_ops import row_ids
from official_bert.tokenizer_kinds import WORDPIECE

MASK_MARKER = "[MASK]"  # BERT's and ALBERT's
BPE_MASK_MARKER = "<mask>"  # RoBERTa's
DEFAULT_TOP_K = 5


class MaskedTextPreprocessor(Preprocessor):
    """A WordPiece `Preprocessor` that turns every `[MASK]` marker of the text into the `[MASK]` id.

    Args:
        vocab_file: the model's `vocab.txt` (it must hold `[MASK]`).
        lower_case: True for uncased models.
        seq_length: the packed length, [CLS] and [SEP] included.
        name: layer name.
    """

    marker = MASK_MARKER

    def __init__(self, vocab_file, lower_case, seq_length, name=None):
        super().__init__(BertTokenizer(vocab_file=str(vocab_file), lower_case=bool(lower_case)), seq_length, name=name)
        if "mask_id" not in self.special_tokens:
            raise ValueError(f"{vocab_file} has no {MASK_MARKER} token: it cannot be a masked-LM vocab")
        self.mask_id = int(self.special_tokens["mask_id"])
        self.marker_ids = tuple(int(i) for i in self.tokenizer(tf.constant([MASK_MARKER])).flat_values.numpy())
        if not self.marker_ids or self.marker_ids[0] in self.marker_ids[1:]:
            raise ValueError(f"{vocab_file}: {MASK_MARKER!r} tokenizes to {list(self.marker_ids)}; the marker needs a "
                             f"first piece that does not recur in it")

    def tokenize(self, text, with_offsets=False):
        """`Preprocessor.tokenize` with each marker's pieces replaced by one `[MASK]` id (offsets: the marker's)."""
        ids, starts, ends = super().tokenize(text, with_offsets=True)  # [batch, (pieces)]
        values = ids.values  # (pieces,) int32
        starts_values, ends_values = tf.cast(starts.values, tf.int64), tf.cast(ends.values, tf.int64)
        splits = tf.cast(ids.row_splits, tf.int64)  # (batch + 1,)
        num_pieces = tf.shape(values, out_type=tf.int64)[0]
        rows = row_ids(splits, num_pieces)  # (pieces,)
        width = len(self.marker_ids)
        index = tf.range(num_pieces)

        def shifted(tensor, steps, fill):  # tensor[i + steps] (steps may be negative), `fill` outside
            pad = tf.fill([width], tf.constant(fill, tensor.dtype))
            return tf.gather(tf.concat([pad, tensor, pad], axis=0), index + width + steps)

        last = width - 1
        match = tf.logical_and(tf.equal(shifted(rows, last, -1), rows),  # the whole marker lies in this text
                               tf.equal(shifted(ends_values, last, -1) - starts_values, len(MASK_MARKER.encode())))
        for step, marker_id in enumerate(self.marker_ids):
            match = tf.logical_and(match, tf.equal(shifted(values, step, -1), marker_id))
        dropped = tf.zeros_like(match)  # the marker's pieces after its first
        for step in range(1, width):
            dropped = tf.logical_or(dropped, shifted(match, -step, False))
        kept = tf.reshape(tf.where(tf.logical_not(dropped)), [-1])  # (kept pieces,)
        kept_before = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(tf.cast(tf.logical_not(dropped), tf.int64))], 0)
        kept_splits = tf.gather(kept_before, splits)  # (batch + 1,)
        values = tf.where(match, tf.constant(self.mask_id, values.dtype), values)
        ends_values = tf.where(match, shifted(ends_values, last, -1), ends_values)
        result = tf.RaggedTensor.from_row_splits(tf.gather(values, kept), kept_splits, validate=False)
        if not with_offsets:
            return result
        return (result, tf.RaggedTensor.from_row_splits(tf.gather(starts_values, kept), kept_splits, validate=False),
                tf.RaggedTensor.from_row_splits(tf.gather(ends_values, kept), kept_splits, validate=False))


class MaskedPartsPreprocessor(Preprocessor):
    """A `Preprocessor` that turns every mask marker of the text into the mask id, as transformers' fast tokenizers
    treat an added special token: the text is cut at each marker and each part is tokenized on its own.

    RoBERTa (`<mask>`, byte-level BPE, layout "roberta"): "<mask>." gives `<mask>` then "."; "<mask> ." gives
    `<mask>` then "Ġ.". The space before a marker stays a "Ġ" piece, as transformers 5 does for a tokenizer built
    from vocab.json + merges.txt; with `lstrip=True` the marker takes the whitespace before it, as roberta-base's
    tokenizer.json declares (`"lstrip": true`) and transformers 4's `RobertaTokenizerFast` did.
    ALBERT (`[MASK]`, SentencePiece, layout "bert"): each part starts a word ("[MASK] likes" -> `[MASK] ▁like s`),
    as `AlbertTokenizerFast`; SentencePiece drops the whitespace around a marker either way.

    Args:
        tokenizer: a `BytePairTokenizer` or `SentencepieceTokenizer` whose vocab holds the marker.
        seq_length: the packed length, the two special tokens included.
        marker: the mask marker, `BPE_MASK_MARKER` or `MASK_MARKER`.
        layout: the family's packing, "roberta" or "bert".
        source: the tokenizer file, named in errors.
        lstrip: the marker absorbs the whitespace before it.
    """

    def __init__(self, tokenizer, seq_length, marker, layout, source, lstrip=False, **kwargs):
        super().__init__(tokenizer, seq_length, layout=layout, **kwargs)
        self.marker = marker
        self.lstrip = bool(lstrip)
        if "mask_id" not in self.special_tokens:
            raise ValueError(f"{source} has no {marker} token: it cannot be a masked-LM vocab")
        self.mask_id = int(self.special_tokens["mask_id"])

    def tokenize(self, text, with_offsets=False):
        """Ids [batch, (pieces)] with one mask id per marker (no offsets: the masked-LM export needs none)."""
        if with_offsets:
            raise ValueError("MaskedPartsPreprocessor.tokenize gives no offsets")
        parts = tf.strings.split(text, sep=self.marker)  # [batch, (parts)]: a row has markers + 1 parts
        index = tf.range(tf.size(parts.flat_values, out_type=tf.int64))  # (parts,)
        is_last = tf.equal(index + 1, tf.gather(parts.row_splits[1:], parts.value_rowids()))  # last of its row
        flat = parts.flat_values
        if self.lstrip:  # the marker takes the whitespace before it
            flat = tf.where(is_last, flat, tf.strings.regex_replace(flat, r"[\s\p{Z}]+$", ""))
        pieces = self.tokenizer(flat)  # [parts, (pieces)]
        masks = tf.RaggedTensor.from_row_lengths(  # [parts, (0 or 1)]: a mask after every part but the last
            tf.fill([tf.reduce_sum(1 - tf.cast(is_last, tf.int64))], tf.constant(self.mask_id, pieces.dtype)),
            1 - tf.cast(is_last, tf.int64))
        joined = tf.concat([pieces, masks], axis=1)  # [parts, (pieces)]
        return tf.RaggedTensor.from_row_splits(joined, parts.row_splits).merge_dims(1, 2)  # [batch, (pieces)]


class MaskedLMModule(ServingModule):
    """Serves the masked-LM head of a `BertPretrainer` trained by `tasks.run_pretraining` (see the module notes).

    Outputs of every signature (`truncated` only on the raw-text ones; `masks` is the batch's largest mask
    count, rows with fewer are padded with "", -1 and 0): `top_k_tokens` [batch, masks, k] string (the vocab
    pieces, best first), `top_k_ids` [batch, masks, k] int32, `top_k_probabilities` [batch, masks, k] float32
    (softmax over the vocab; a model whose embedding table is padded past the vocab predicts the vocab's pieces
    only), `mask_positions` [batch, masks] int32 (in the packed sequence, [CLS] = 0), `num_masks` [batch] int32.
    `serve_tokens` reads the masks as the positions holding the `[MASK]` id.

    Args:
        model: a `BertPretrainer` with its trained weights.
        preprocessor: a `MaskedTextPreprocessor`.
        top_k: candidates per mask.
        assets: file name -> path of files to ship in `assets/`.
    """

    def __init__(self, model, preprocessor, top_k, assets):
        vocab = [token or "" for token in preprocessor.tokenizer.get_vocab()]  # a BPE vocab may skip ids
        if not 1 <= top_k <= len(vocab):
            raise ValueError(f"top_k must be between 1 and the vocab size {len(vocab)}, got {top_k}")
        if model.masked_lm.vocab_size < len(vocab):
            raise ValueError(f"the model predicts {model.masked_lm.vocab_size} pieces, but the vocab has {len(vocab)}")
        super().__init__(preprocessor, ("text",), assets, name="masked_lm")
        self.model = model
        # The encoder traced once for every signature's shapes (export.traced_once), not once each.
        self._sequence_output = TracedOnce(lambda inputs: self.model.encoder(inputs, training=False)["sequence_output"])
        self.top_k = int(top_k)
        self.mask_id = preprocessor.mask_id
        self._vocab = tuple(vocab) + ("",)  # index -1 (padding) reads the last entry

    quantizes_word_table = False  # the head decodes with it
    answers_top_k = True

    @classmethod
    def preprocessor_for(cls, loaded, seq_length):
        """The masked-text preprocessor of a pre-training model_dir: RoBERTa's `<mask>` and ALBERT's `[MASK]` are
        added tokens of their tokenizers (`MaskedPartsPreprocessor`), BERT's `[MASK]` is found in the pieces."""
        from official_bert.text.preprocessing import tokenizer_from_files

        if loaded.config.tokenizer_kind != WORDPIECE:  # <mask> / [MASK]: an added token of the tokenizer
            marker = loaded.config.family.special_tokens["mask"]
            return MaskedPartsPreprocessor(tokenizer_from_files(loaded.vocab_file, loaded.lower_case), seq_length,
                                           marker, loaded.config.packing_layout, source=loaded.vocab_file)
        return MaskedTextPreprocessor(loaded.vocab_file, loaded.lower_case, seq_length)

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """A pre-training model_dir's masked-LM module (`top_k`: default `DEFAULT_TOP_K`)."""
        return cls(loaded.model, cls.preprocessor_for(loaded, seq_length), DEFAULT_TOP_K if top_k is None else top_k,
                   assets)

    def warmup_texts(self):
        marker = self.preprocessor.marker
        return {"text": [f"Peter Blackburn flew to {marker} on Monday to meet the European Commission.",
                         f"It's a {marker} and often affecting {marker}."]}

    def answer_text(self, texts):
        """The raw-text answer with the model run at the request's longest text, not at `seq_length` pieces (no
        output has the sequence axis, and padding is masked out of the attention)."""
        inputs, truncated = self.preprocessor.pack(texts)  # (batch, seq_length) each
        return {**self.answer_tokens(trim_inputs(inputs)[0]), "truncated": truncated}

    def tflite_answer_text(self, texts):
        return super().answer_text(texts)  # fixed (batch, seq_length) for TFLite

    def masked_lm_logits(self, inputs, positions):
        """`BertPretrainer`'s masked-LM logits at `positions`, from its encoder and `MaskedLMHead` layers.

        The same computation as the head's `call`, with a flat gather of the hidden states instead of its
        `take_along_axis`, which lowers to a StridedSlice LiteRT's builtins lack (the tests check the result
        against `BertPretrainer` itself).

        Args:
            inputs: the encoder's dict of int32 (batch, seq).
            positions: int32 (batch, masks), each in [0, seq).

        Returns:
            float32 (batch, masks, vocab): the vocab's pieces only (a padded table's extra rows are no piece).
        """
        head = self.model.masked_lm
        pieces = len(self._vocab) - 1  # <= head.vocab_size
        sequence = self._sequence_output(inputs)  # (batch, seq, hidden)
        hidden_size = sequence.shape[-1]
        rows = tf.range(tf.shape(positions)[0])[:, None] * tf.shape(sequence)[1]  # (batch, 1)
        hidden = tf.gather(tf.reshape(sequence, [-1, hidden_size]), tf.reshape(positions + rows, [-1]))
        hidden = head.layer_norm(head.dense(hidden))  # (batch * masks, hidden)
        table, bias = head.embedding_layer.word_embeddings, head.output_bias
        if pieces < head.vocab_size:
            table, bias = table[:pieces], bias[:pieces]
        logits = tf.matmul(hidden, table, transpose_b=True) + bias
        return tf.reshape(logits, tf.concat([tf.shape(positions), [pieces]], axis=0))

    def answer_tokens(self, inputs):
        ids = inputs["input_word_ids"]  # (batch, seq)
        is_mask = tf.logical_and(tf.equal(ids, self.mask_id), tf.equal(inputs["input_mask"], 1))  # (batch, seq)
        num_masks = tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1)  # (batch,)
        width = tf.reduce_max(tf.concat([num_masks, tf.zeros([1], tf.int32)], axis=0))
        rank = tf.cumsum(tf.cast(is_mask, tf.int32), axis=1, exclusive=True)  # (batch, seq) masks before
        where = tf.where(is_mask)  # (masks, 2) [row, position]
        indices = tf.stack([where[:, 0], tf.cast(tf.gather_nd(rank, where), tf.int64)], axis=1)  # (masks, 2)
        shape = tf.cast(tf.stack([tf.shape(ids)[0], width]), tf.int64)
        positions = tf.scatter_nd(indices, tf.cast(where[:, 1], tf.int32) + 1, shape) - 1  # (batch, masks), -1 pad
        logits = self.masked_lm_logits(inputs, tf.maximum(positions, 0))  # (batch, masks, vocab) float32
        probabilities = tf.nn.softmax(logits, axis=-1)

        # Top k by repeated argmax (ties: the lower id), with core ops only.
        vocab_ids = tf.range(len(self._vocab) - 1, dtype=tf.int32)  # (vocab,)
        remaining = logits
        top_ids, top_probabilities = [], []
        for _ in range(self.top_k):
            best = tf.argmax(remaining, axis=-1, output_type=tf.int32)  # (batch, masks)
            chosen = tf.equal(vocab_ids, _trailing_axis(best))  # (batch, masks, vocab)
            top_ids.append(best)
            top_probabilities.append(tf.reduce_sum(tf.where(chosen, probabilities, 0.0), axis=-1))
            remaining = tf.where(chosen, tf.constant(float("-inf"), logits.dtype), remaining)
        real = _trailing_axis(positions >= 0)  # (batch, masks, 1)
        top_ids = tf.where(real, tf.stack(top_ids, axis=2), -1)  # (batch, masks, k)
        top_probabilities = tf.where(real, tf.stack(top_probabilities, axis=2), 0.0)
        return {"top_k_tokens": tf.gather(tf.constant(list(self._vocab)), tf.math.floormod(top_ids, len(self._vocab))),
                "top_k_ids": top_ids, "top_k_probabilities": top_probabilities, "mask_positions": positions,
                "num_masks": num_masks}


def _trailing_axis(tensor):
    """`tensor[..., None]` as a Reshape: LiteRT's builtins cannot slice a new axis onto a fully dynamic shape."""
    return tf.reshape(tensor, tf.concat([tf.shape(tensor), [1]], axis=0))
