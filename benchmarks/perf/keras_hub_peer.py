"""The keras-hub (`BertBackbone`, TensorFlow backend) peer of the performance suite.

keras-hub's XLA path is slower on CPU (measured in issue 8), so it runs as a plain tf.function unless
`jit_compile` is set.
"""

import numpy as np

from benchmarks.perf.inputs import packed_inputs
from benchmarks.perf.memory import memory_result, rss_mib
from benchmarks.perf.shapes import SHAPES, VOCAB_SIZE
from benchmarks.perf.timing import measure

_POLICY = {"value": "float32"}


def setup(precision):
    import keras

    _POLICY["value"] = "mixed_bfloat16" if precision == "bf16" else "float32"
    keras.mixed_precision.set_global_policy(_POLICY["value"])


def _backbone(shape):
    import keras_hub

    layers, hidden, heads, intermediate = SHAPES[shape]
    return keras_hub.models.BertBackbone(vocabulary_size=VOCAB_SIZE, num_layers=layers, num_heads=heads,
                                         hidden_dim=hidden, intermediate_dim=intermediate, dtype=_POLICY["value"])


def _feed(batch_size, seq_length):
    import tensorflow as tf

    ids, mask, types, labels = packed_inputs(batch_size, seq_length)
    return ({"token_ids": tf.constant(ids), "padding_mask": tf.constant(mask), "segment_ids": tf.constant(types)},
            tf.constant(labels))


def inference(shape, batch_sizes, seq_length, repeats, jit_compile=None):
    import tensorflow as tf

    backbone = _backbone(shape)
    forward = tf.function(lambda x: backbone(x, training=False), jit_compile=bool(jit_compile), reduce_retracing=True)
    for batch_size in batch_sizes:
        inputs, _ = _feed(batch_size, seq_length)
        timing = measure(lambda: [v.numpy() for v in forward(inputs).values()], repeats)
        yield {"batch_size": batch_size, "jit_compile": bool(jit_compile), **timing}


def _classifier(shape, jit_compile):
    """keras-hub's `BertTextClassifier` (no preprocessor), compiled with AdamW and global-norm clipping."""
    import keras
    import keras_hub

    model = keras_hub.models.BertTextClassifier(_backbone(shape), num_classes=2, preprocessor=None)
    model.compile(optimizer=keras.optimizers.AdamW(2e-5, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=bool(jit_compile))
    return model


def train_memory(shape, batch_size, seq_length, epochs, steps_per_epoch, jit_compile=None):
    """Resident memory (MiB) after each epoch of `Model.fit` on a repeating tf.data stream, and the peak."""
    import keras
    import tensorflow as tf

    model, after_epoch = _classifier(shape, jit_compile), []
    dataset = tf.data.Dataset.from_tensors(_feed(batch_size, seq_length)).repeat()
    record = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: after_epoch.append(rss_mib()))
    model.fit(dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, callbacks=[record], verbose=0)
    return memory_result(batch_size, after_epoch, jit_compile=bool(jit_compile))


def train(shape, batch_size, seq_length, steps, jit_compile=None):
    model = _classifier(shape, jit_compile)
    inputs, labels = _feed(batch_size, seq_length)
    losses = []
    timing = measure(lambda: losses.append(float(np.asarray(model.train_on_batch(inputs, labels)).reshape(-1)[0])),
                     steps)
    return {"batch_size": batch_size, "jit_compile": bool(jit_compile), "final_loss": losses[-1], **timing}
