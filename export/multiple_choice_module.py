"""MultipleChoiceModule: a context and its choices (raw text) -> the chosen choice, each choice's score and probability.

Signatures (the three of every export, with inputs of their own):
- `serving_default`: `context` [batch] strings and `choices` [batch, n] strings, "" where a question has fewer
  than n choices (such a choice is masked: score `MASKED_LOGIT` = -1e9, probability 0, never chosen).
  A [batch] `choices` vector is read as one choice per question (what a client sending one string per input gets).
  Outputs: `label_id` [batch] int32 (the chosen choice's index), `scores` [batch, n] float32 (the model's logits),
  `probabilities` [batch, n] (softmax over the choices), `truncated` [batch] bool (some pair of the question did
  not fit in `seq_length` pieces).
- `serve_examples`: serialized `tf.Example`s with a bytes feature `context` and a bytes list `choices` (any number
  per example; the batch is padded with "" to its largest) -> the same outputs.
- `serve_tokens`: int32 `input_word_ids` / `input_mask` / `input_type_ids` [batch, n, seq_length] (a missing
  choice is an all-zero row) -> `label_id`, `scores`, `probabilities`.

Each pair is packed `[CLS] context [SEP] choice [SEP]` by `data.multiple_choice_dataset.pack_choices`, as in
training: `context` is a question's first segment and a choice its second, as `data.multiple_choice` reads them
from a file. A question without a context (CommonsenseQA's shape) sends the question as `context` and each choice
alone; with a context and a question, a choice is `question + " " + choice`. The raw-text signatures run the
encoder at the request's longest pair (the padding is masked and the scores come from [CLS]); the TFLite form
(`tflite_serving_default`: `choices` [batch, n] only) keeps the fixed length.
"""

import numpy as np
import tensorflow as tf

from export.preprocessing import token_input_specs
from export.serving_module import ServingModule
from export.traced_once import TracedOnce
from official_bert.data.multiple_choice_dataset import pack_choices, trim_choice_padding
from official_bert.models.encoder import ENCODER_INPUTS

CONTEXT, CHOICES = "context", "choices"


def parse_choice_examples(serialized):
    """`(contexts [batch], choices [batch, n])` from serialized `tf.Example`s (`ParseExampleV2`); the choices lists
    are padded with "" to the longest, with dense ops (no SparseToDense)."""
    parsed = tf.io.parse_example(serialized, {CONTEXT: tf.io.FixedLenFeature([], tf.string),
                                              CHOICES: tf.io.VarLenFeature(tf.string)})
    sparse = parsed[CHOICES]
    count = tf.shape(sparse.values)[0]
    # Position of each value in [""] + values, scattered into the dense shape: 0 (the "") where there is none.
    positions = tf.scatter_nd(sparse.indices, tf.range(1, count + 1), sparse.dense_shape)  # (batch, n)
    return parsed[CONTEXT], tf.gather(tf.concat([tf.constant([""]), sparse.values], axis=0), positions)


class MultipleChoiceModule(ServingModule):
    """Serves a `BertMultipleChoice` (see the module notes).

    Args:
        model: a `BertMultipleChoice` with its trained weights.
        preprocessor: an `official_bert.text.Preprocessor`.
        assets: file name -> path of files to ship in `assets/`.
    """

    def __init__(self, model, preprocessor, assets):
        super().__init__(preprocessor, (CONTEXT, CHOICES), assets, name="multiple_choice")
        self.model = model
        self._model = TracedOnce(lambda inputs: self.model(inputs, training=False))  # (reads self.model when traced)
        context_spec = tf.TensorSpec([None], tf.string, name=CONTEXT)
        token_specs = {name: tf.TensorSpec([None, None, spec.shape[1]], tf.int32, name=name)
                       for name, spec in token_input_specs(preprocessor.seq_length).items()}

        def serve(context, choices):
            shape = tf.concat([tf.shape(choices), [1]], axis=0)  # [batch, n, 1], or [batch, 1] for [batch] choices
            choices = tf.reshape(choices, tf.stack([shape[0], shape[1]]))  # (batch, n) or (batch, 1)
            return self.answer_text([context, choices])

        def serve_lite(context, choices):
            return self.tflite_answer_text([context, choices])

        def serve_examples(examples):
            return self.answer_text(list(parse_choice_examples(examples)))

        def serve_tokens(input_word_ids, input_mask, input_type_ids):
            return self.answer_tokens({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                       "input_type_ids": input_type_ids})

        # The base class's functions of [batch] texts are replaced (they were never traced).
        self.serving_default = tf.function(serve, autograph=False, input_signature=[
            context_spec, tf.TensorSpec(None, tf.string, name=CHOICES)])  # [batch, n], or [batch]
        self.tflite_serving_default = tf.function(serve_lite, autograph=False, input_signature=[
            context_spec, tf.TensorSpec([None, None], tf.string, name=CHOICES)])  # TFLite needs the rank
        self.serve_examples = tf.function(serve_examples, autograph=False,
                                          input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        self.serve_tokens = tf.function(serve_tokens, input_signature=[token_specs[k] for k in ENCODER_INPUTS],
                                        autograph=False)

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """A multiple-choice model_dir's module."""
        return cls(loaded.model, cls.preprocessor_for(loaded, seq_length), assets)

    def answer_tokens(self, inputs):
        scores = self._model(inputs)  # (batch, choices) float32; missing choices -1e9
        return {"scores": scores, "probabilities": tf.nn.softmax(scores, axis=-1),
                "label_id": tf.argmax(scores, axis=-1, output_type=tf.int32)}

    def _answer(self, texts, trim):
        inputs, truncated = pack_choices(self.preprocessor, texts[0], texts[1])  # (batch, choices, seq_length)
        if trim:
            inputs = trim_choice_padding(inputs)  # (batch, choices, longest pair)
        truncated = tf.reduce_max(tf.cast(truncated, tf.int32), axis=1) > 0  # (batch,) some pair was cut
        return {**self.answer_tokens(inputs), "truncated": truncated}

    def answer_text(self, texts):
        return self._answer(texts, trim=True)

    def tflite_answer_text(self, texts):
        return self._answer(texts, trim=False)  # fixed (batch, choices, seq_length)

    def warmup_texts(self):
        return {CONTEXT: ["A drum line passes by walking down the street playing their instruments.",
                          "The cat sat on the mat."],
                CHOICES: [["Members of the procession walk down the street holding small horn brass instruments.",
                           "Members of the procession wait slowly towards the cadets.",
                           "Members of the procession are playing ping pong.",
                           "Members of the procession continue to play marching, interspersed."],
                          ["It purred.", "It flew to the moon.", "", ""]]}

    def warmup_requests(self):
        """One request per signature (`export.warmup`), with a question of four choices and one of two."""
        texts = self.warmup_texts()
        contexts = np.array(texts[CONTEXT], dtype=object)
        choices = np.array(texts[CHOICES], dtype=object)  # (2, 4)
        examples = []
        for context, row in zip(texts[CONTEXT], texts[CHOICES]):
            feature = {CONTEXT: tf.train.Feature(bytes_list=tf.train.BytesList(value=[context.encode("utf-8")])),
                       CHOICES: tf.train.Feature(bytes_list=tf.train.BytesList(
                           value=[c.encode("utf-8") for c in row if c]))}
            examples.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        inputs, _ = pack_choices(self.preprocessor, tf.constant(contexts.astype(str)), tf.constant(choices.astype(str)))
        return [("serving_default", {CONTEXT: contexts, CHOICES: choices}),
                ("serve_examples", {"examples": np.array(examples, dtype=object)}),
                ("serve_tokens", {name: value.numpy() for name, value in inputs.items()})]
