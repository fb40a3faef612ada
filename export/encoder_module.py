"""EncoderModule: raw text -> BERT's sequence and pooled outputs and a mean-pooled sentence embedding."""

import numpy as np
import tensorflow as tf

from export.request_length import RequestLengthModel
from export.serving_module import ServingModule
from export.traced_once import TracedOnce
from official_bert.pipelines.embedder import masked_mean  # the Embedder's pooling, so both compute the same


class EncoderModule(ServingModule):
    """Serves a bare `BertEncoder` (feature extraction, sentence embeddings).

    Outputs of every signature (`truncated` only on the raw-text ones):
    `sequence_output` [batch, seq, hidden], `pooled_output` [batch, hidden] (tanh pooler on [CLS]),
    `mean_pooled_output` [batch, hidden] (masked mean of `sequence_output` over real tokens, sentence-transformers'
    mean pooling), `normalized_embedding` (its L2 normalisation: what sentence-transformers' all-MiniLM
    models return), and `input_mask` [batch, seq] int32 (which rows of `sequence_output` are real tokens).

    A fourth signature, `embed`, is the sentence-embedding one: `text` [batch] string -> `embedding` [batch,
    hidden] (mean-pooled, L2-normalised: `official_bert.pipelines.Embedder`'s vectors) and `truncated`. An output
    named `embedding` is that normalised vector only (the other signatures' raw mean is `mean_pooled_output`).

    With `jit_compile`, an `embed` request without padding (one text, or texts of one length) runs the encoder as
    one XLA program (`export.request_length`); TF Serving then needs `--xla_cpu_compilation_enabled=true`.

    Args:
        encoder: a `BertEncoder` with its weights.
        preprocessor: an `official_bert.text.Preprocessor`.
        assets: file name -> path of files to ship in `assets/`.
        jit_compile: XLA-compile `embed` for requests without padding.
    """

    compiled_signature = "embed"

    compiles_requests = True

    def __init__(self, encoder, preprocessor, assets, jit_compile=False):
        super().__init__(preprocessor, ("text",), assets, name="encoder", jit_compile=jit_compile)
        self.encoder = encoder
        self._encoder = TracedOnce(lambda inputs: self.encoder(inputs, training=False))  # (reads it when traced)
        self._at_request_length = RequestLengthModel(
            lambda inputs: self._encoder(inputs)["sequence_output"],
            TracedOnce(lambda inputs: self.encoder(inputs, training=False, real_tokens=True)["sequence_output"]),
            jit_compile)
        self.embed = tf.function(self._embed, input_signature=[tf.TensorSpec([None], tf.string, name="text")],
                                 autograph=False)

    def _embed(self, text):
        """`embed`: the encoder runs at the request's longest text, not at `seq_length` pieces, and for a request
        of unequal lengths on its real tokens only (`BertEncoder`'s `real_tokens=True`), as the classifier's raw-text
        signatures do: the mean over real tokens is the same (padding is masked out of the attention), and a
        short query costs its own length."""
        packed, truncated = self.preprocessor.pack([text])  # (batch, seq_length) each
        sequence_output, inputs = self._at_request_length(packed)  # (batch, longest, hidden), (batch, longest)
        embedding = masked_mean(sequence_output, inputs["input_mask"])  # (batch, hidden)
        return {"embedding": tf.math.l2_normalize(embedding, axis=-1), "truncated": truncated}

    def signatures(self):
        return {**super().signatures(), "embed": self.embed}

    def warmup_requests(self):
        """The three signatures' requests (`ServingModule.warmup_requests`) and the sample texts on `embed`: one
        request per signature (with `jit_compile`, also one single text per compiled length on `embed`)."""
        return super().warmup_requests() + [("embed", {"text": np.array(self.warmup_texts()["text"], dtype=object)})]

    def answer_tokens(self, inputs):
        outputs = self._encoder(inputs)
        sequence_output = outputs["sequence_output"]  # (batch, seq, hidden)
        mean = masked_mean(sequence_output, inputs["input_mask"])  # (batch, hidden)
        return {"sequence_output": sequence_output, "pooled_output": outputs["pooled_output"],
                "mean_pooled_output": mean, "normalized_embedding": tf.math.l2_normalize(mean, axis=-1),
                "input_mask": inputs["input_mask"]}
