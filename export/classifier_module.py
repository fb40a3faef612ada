"""ClassifierModule: raw text (or a text pair) -> class logits, probabilities and label name (or every label over a
threshold, for multi-label), or a score."""

import os

import tensorflow as tf

from export.request_length import RequestLengthModel
from export.serving_module import ServingModule, with_labels_file
from export.traced_once import TracedOnce
from official_bert.data.padding import trim_inputs


class ClassifierModule(ServingModule):
    """Serves a `BertClassifier` (GLUE-style sequence classification or regression).

    Outputs of every signature (`truncated` only on the raw-text ones):
    - classification: `logits` [batch, classes] float32, `probabilities` [batch, classes] (softmax),
      `label_id` [batch] int32 (argmax), `label` [batch] string (the class name).
    - multi-label: `logits` [batch, labels], `probabilities` [batch, labels] (sigmoid), `predicted` [batch, labels]
      bool (probability over the threshold), `labels` [batch, labels] string (the label's name where predicted,
      "" elsewhere).
    - regression (STS-B): `score` [batch] float32.

    The raw-text signatures run the encoder on the request's longest text, not on `seq_length` pieces, and every
    layer's dense matmuls on its real tokens only when the batch has padding (`model(..., real_tokens=True)`;
    a tf.cond picks the plain model for a batch without): the padding is masked out of
    attention and the answer comes from [CLS], so only the compute changes (a short single-text request costs its
    own length; a batch, its texts' total length). The TFLite function runs the plain model at the request's longest
    text (LiteRT sizes its tensors at each request); `serve_tokens` runs the model as it is.

    With `jit_compile`, a raw-text request without padding (one text, or texts of one length) runs the model as one
    XLA program (`export.request_length`); TF Serving then needs `--xla_cpu_compilation_enabled=true`.

    Args:
        model: a `BertClassifier` with its trained weights.
        preprocessor: an `official_bert.text.Preprocessor`.
        label_names: the class names, in class-index order (ignored for regression).
        is_regression: True for a one-output regression model.
        text_features: the raw-text input names: ("text",) or ("text", "text_b") for GLUE's pair tasks, or the
            task's own (task.json's `text_features`).
        assets: file name -> path of files to ship in `assets/`.
        jit_compile: XLA-compile the model for raw-text requests without padding (see above).
        multi_label: the model's outputs are independent labels (sigmoid).
        threshold: multi-label: a label is predicted when its probability is over it.
    """

    compiles_requests = True

    def __init__(self, model, preprocessor, label_names, is_regression, text_features, assets, jit_compile=False,
                 multi_label=False, threshold=0.5):
        super().__init__(preprocessor, text_features, assets, name="classifier", jit_compile=jit_compile)
        self.model = model
        self._model = TracedOnce(lambda inputs: self.model(inputs, training=False))  # (reads self.model when traced)
        self._at_request_length = RequestLengthModel(
            self._model, TracedOnce(lambda inputs: self.model(inputs, training=False, real_tokens=True)), jit_compile,
            per_token=False)
        self.is_regression = bool(is_regression)
        self.multi_label, self.threshold = bool(multi_label), float(threshold)
        self.label_names = [str(name) for name in label_names]
        expected = 1 if self.is_regression else len(self.label_names)
        if model.num_classes != expected:
            raise ValueError(f"the model has {model.num_classes} outputs, but {expected} are expected for "
                             f"{'regression' if self.is_regression else f'labels {self.label_names}'}")

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """A classification model_dir's module: its labels (`labels.txt`), regression or not, text features and
        multi-label threshold, from task.json."""
        info = loaded.info
        if "text_features" not in info:  # written before they were recorded, for a task not in GLUE's table
            raise ValueError(f"{os.path.join(loaded.model_dir, 'task.json')}: field 'text_features' missing (task "
                             f"{info['task']!r} is not a GLUE task, and an older official-bert did not record "
                             "them); add it, e.g. \"text_features\": [\"text\", \"text_b\"] for a pair task")
        labels = list(info["label_names"])
        return cls(loaded.model, cls.preprocessor_for(loaded, seq_length), labels, bool(info.get("is_regression")),
                   info["text_features"], with_labels_file(assets, labels, staging_dir), jit_compile,
                   bool(info.get("multi_label")), info.get("threshold", 0.5))

    def answer_text(self, texts):
        packed, truncated = self.preprocessor.pack(texts)  # (batch, seq_length) each
        logits, _ = self._at_request_length(packed)  # (batch, classes) float32
        return {**self._answer(logits), "truncated": truncated}

    def tflite_answer_text(self, texts):
        packed, truncated = self.preprocessor.pack(texts)  # (batch, seq_length) each
        return {**self.answer_tokens(trim_inputs(packed)[0]), "truncated": truncated}  # at (batch, longest)

    def answer_tokens(self, inputs):
        return self._answer(self._model(inputs))

    def _answer(self, logits):
        """The outputs from the logits, (batch, classes) float32."""
        if self.is_regression:
            return {"score": logits[:, 0]}
        if self.multi_label:
            probabilities = tf.sigmoid(logits)  # (batch, labels)
            predicted = probabilities > self.threshold
            # label j is entry 2j ("") or 2j + 1 (its name) of one table: a gather, which TFLite has (not SelectV2)
            table = tf.constant([text for name in self.label_names for text in ("", name)])  # (2 labels,)
            index = 2 * tf.range(len(self.label_names)) + tf.cast(predicted, tf.int32)  # (batch, labels)
            return {"logits": logits, "probabilities": probabilities, "predicted": predicted,
                    "labels": tf.gather(table, index)}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (batch,)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id,
                "label": tf.gather(tf.constant(self.label_names), label_id)}
