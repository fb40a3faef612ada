"""TimeSeriesModule: sequences of feature vectors -> class label, id and probabilities (`BertTimeSeriesClassifier`)."""

import numpy as np
import tensorflow as tf

from export.serving_module import ServingModule, with_labels_file


class TimeSeriesModule(ServingModule):
    """Serves a `BertTimeSeriesClassifier`: its inputs are numbers, not text, so it has one signature,
    `serving_default`, and no tokenizer (a `ServingModule` without the raw-text constructor).

    `serving_default`: `features` [batch, time, channels] float32 (zero-padded; any time up to the model's `max_time`)
    and `lengths` [batch] int32 (each sequence's real steps) -> `label` [batch] string, `label_id` [batch] int32,
    `probabilities` [batch, classes] float32 and `logits` [batch, classes]. The model's per-channel standardisation
    (task.json's) is part of the graph. TFLite converts the same function with `time` fixed at `max_time`.

    Args:
        model: a `BertTimeSeriesClassifier` with its trained weights.
        label_names: the class names, in class-id order.
        max_time: the longest sequence the model takes.
        assets: file name -> path of files to ship in `assets/` (`labels.txt`).
    """

    quantizes_word_table = False  # (no word-piece table)

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """A time-series model_dir's module: its labels (`labels.txt`); `seq_length` is the classification position
        and `max_time` steps. `assets` names no tokenizer file (the model_dir has none)."""
        labels = list(loaded.info["label_names"])
        files = {name: path for name, path in assets.items() if path is not None}
        return cls(loaded.model, labels, seq_length - 1, with_labels_file(files, labels, staging_dir))

    def __init__(self, model, label_names, max_time, assets):
        tf.Module.__init__(self, name="time_series_classifier")
        self.jit_compile = False
        self.model = model
        self.label_names = [str(name) for name in label_names]
        self.max_time = int(max_time)
        self.channels = model.encoder.input_channels
        if model.num_classes != len(self.label_names):
            raise ValueError(f"the model has {model.num_classes} outputs, but there are {len(self.label_names)} "
                             f"labels {self.label_names}")
        self.assets = {name: tf.saved_model.Asset(path) for name, path in assets.items()}
        specs = [tf.TensorSpec([None, None, self.channels], tf.float32, name="features"),
                 tf.TensorSpec([None], tf.int32, name="lengths")]
        self.serving_default = tf.function(self.answer, input_signature=specs, autograph=False)
        # TFLite: time fixed at `max_time` (the attention mask's broadcast is a strided slice LiteRT runs only on a
        # known sequence length); a client zero-pads to it.
        self.tflite_serving_default = tf.function(self.answer, autograph=False, input_signature=[
            tf.TensorSpec([None, self.max_time, self.channels], tf.float32, name="features"), specs[1]])

    def signatures(self):
        return {"serving_default": self.serving_default}

    def answer(self, features, lengths):
        """The outputs for features (batch, time, channels) float32 and lengths (batch,) int32."""
        mask = tf.sequence_mask(lengths, tf.shape(features)[1], dtype=tf.int32)  # (batch, time)
        logits = self.model({"input_features": features, "input_mask": mask}, training=False)  # (batch, classes)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (batch,)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id,
                "label": tf.gather(tf.constant(self.label_names), label_id)}

    def warmup_requests(self):
        """A batch of two sequences of unequal lengths (the second zero-padded) and one full-length sequence."""
        rng = np.random.default_rng(0)
        features = rng.normal(size=(2, self.max_time, self.channels)).astype(np.float32)
        short = max(1, self.max_time // 2)
        features[1, short:] = 0.0
        return [("serving_default", {"features": features, "lengths": np.array([self.max_time, short], np.int32)}),
                ("serving_default", {"features": features[:1], "lengths": np.array([self.max_time], np.int32)})]
