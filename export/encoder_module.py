"""EncoderModule: raw text -> BERT's sequence and pooled outputs and a mean-pooled sentence embedding."""

import tensorflow as tf

from export.serving_module import ServingModule


def masked_mean(sequence_output, input_mask):
    """Mean of the real tokens' vectors, as sentence-transformers' mean pooling computes it.

    Args:
        sequence_output: float [batch, seq, hidden].
        input_mask: int [batch, seq], 1 on real tokens ([CLS] and [SEP] included).

    Returns:
        float [batch, hidden].
    """
    mask = tf.cast(input_mask, sequence_output.dtype)[:, :, None]  # (batch, seq, 1)
    summed = tf.reduce_sum(sequence_output * mask, axis=1)  # (batch, hidden)
    count = tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)  # (batch, 1), clamped as sentence-transformers does
    return summed / count


class EncoderModule(ServingModule):
    """Serves a bare `BertEncoder` (feature extraction, sentence embeddings).

    Outputs of every signature (`truncated` only on the raw-text ones):
    `sequence_output` [batch, seq, hidden], `pooled_output` [batch, hidden] (tanh pooler on [CLS]),
    `embedding` [batch, hidden] (masked mean of `sequence_output` over real tokens, sentence-transformers'
    mean pooling), `normalized_embedding` (its L2 normalisation: what sentence-transformers' all-MiniLM
    models return), and `input_mask` [batch, seq] int32 (which rows of `sequence_output` are real tokens).

    Args:
        encoder: a `BertEncoder` with its weights.
        preprocessor: an `official_bert.text.TextPreprocessor`.
        assets: file name -> path of files to ship in `assets/`.
    """

    def __init__(self, encoder, preprocessor, assets):
        super().__init__(preprocessor, ("text",), assets, name="encoder")
        self.encoder = encoder

    def answer_tokens(self, inputs):
        outputs = self.encoder(inputs, training=False)
        sequence_output = outputs["sequence_output"]  # (batch, seq, hidden)
        embedding = masked_mean(sequence_output, inputs["input_mask"])  # (batch, hidden)
        return {"sequence_output": sequence_output, "pooled_output": outputs["pooled_output"],
                "embedding": embedding, "normalized_embedding": tf.math.l2_normalize(embedding, axis=-1),
                "input_mask": inputs["input_mask"]}
