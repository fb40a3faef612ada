"""Our side of the performance suite: `BertEncoder` inference, `BertClassifier` training steps, and raw text
through an exported classifier SavedModel."""

import os

import numpy as np

from benchmarks.perf.inputs import packed_inputs
from benchmarks.perf.memory import memory_result, rss_mib
from benchmarks.perf.shapes import SHAPES, VOCAB_SIZE
from benchmarks.perf.timing import measure


_PRECISION = {"value": "fp32"}


def setup(precision):
    """Sets the Keras policy before any model is built ("fp32" or "bf16": mixed_bfloat16, as training runs)."""
    from official_bert import training

    _PRECISION["value"] = precision
    training.set_mixed_precision("bfloat16" if precision == "bf16" else None)


def _config(shape):
    from official_bert import BertConfig

    layers, hidden, heads, intermediate = SHAPES[shape]
    return BertConfig(vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                      intermediate_size=intermediate)


def _feed(batch_size, seq_length):
    import tensorflow as tf

    ids, mask, types, labels = packed_inputs(batch_size, seq_length)
    inputs = {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask), "input_type_ids": tf.constant(types)}
    return inputs, tf.constant(labels)


def inference(shape, batch_sizes, seq_length, repeats, jit_compile):
    """Yields one result dict per batch size: seconds per forward pass of `sequence_output` + `pooled_output`.
    bf16: the encoder holds bf16 weights, as `export.saved_model --precision=bfloat16` serves it."""
    import keras
    import tensorflow as tf

    from export.saved_model import SERVING_PRECISIONS
    from official_bert import BertEncoder
    from official_bert.training import default_jit_compile

    jit = default_jit_compile() if jit_compile is None else jit_compile
    # bf16 inference as a `--precision=bfloat16` export serves: weights stored in bf16, mixed_bfloat16's numerics.
    keras.config.set_dtype_policy(SERVING_PRECISIONS["bfloat16" if _PRECISION["value"] == "bf16" else "float32"])
    encoder = BertEncoder(_config(shape))
    forward = tf.function(lambda x: encoder(x, training=False), jit_compile=jit, reduce_retracing=True)
    for batch_size in batch_sizes:
        inputs, _ = _feed(batch_size, seq_length)
        timing = measure(lambda: [v.numpy() for k, v in forward(inputs).items() if k != "encoder_outputs"], repeats)
        yield {"batch_size": batch_size, "jit_compile": jit, **timing}


def train(shape, batch_size, seq_length, steps, jit_compile):
    """Seconds per optimizer step of sequence-pair classification (AdamW, clipping, warmup schedule)."""
    from official_bert import BertEncoder
    from official_bert.models import BertClassifier
    from official_bert.optimization import create_optimizer
    from official_bert.training import default_jit_compile

    import keras

    jit = default_jit_compile() if jit_compile is None else jit_compile
    model = BertClassifier(BertEncoder(_config(shape)), num_classes=2)
    model.compile(optimizer=create_optimizer(2e-5, 10_000, 1_000),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    inputs, labels = _feed(batch_size, seq_length)
    losses = []
    timing = measure(lambda: losses.append(float(np.asarray(model.train_on_batch(inputs, labels)).reshape(-1)[0])),
                     steps)
    return {"batch_size": batch_size, "jit_compile": jit, "final_loss": losses[-1], **timing}


def train_memory(shape, batch_size, seq_length, epochs, steps_per_epoch, jit_compile):
    """Resident memory (MiB) after each epoch of `Model.fit` on a repeating tf.data stream, and the peak."""
    import keras
    import tensorflow as tf

    from official_bert import BertEncoder
    from official_bert.models import BertClassifier
    from official_bert.optimization import create_optimizer
    from official_bert.training import default_jit_compile

    jit = default_jit_compile() if jit_compile is None else jit_compile
    model = BertClassifier(BertEncoder(_config(shape)), num_classes=2)
    model.compile(optimizer=create_optimizer(2e-5, 10_000, 1_000),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    inputs, labels = _feed(batch_size, seq_length)
    dataset = tf.data.Dataset.from_tensors((inputs, labels)).repeat()
    after_epoch = []

    class RecordMemory(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            after_epoch.append(rss_mib())

    model.fit(dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, callbacks=[RecordMemory()], verbose=0)
    return memory_result(batch_size, after_epoch, jit_compile=jit)


def serving(latency_texts, batch_size, repeats, model_dir, jit_compile=False, lite=None, lite_threads=0):
    """Raw text -> label through `export.saved_model`'s SavedModel (`serving_default`, loaded in this process).
    With `jit_compile`, the export of `export.saved_model --jit_compile`, its warm-up requests replayed first (as
    TF Serving does when it loads a model). With `lite` ("none", "dynamic_int8" or "full_int8"), that export's
    `export.tflite` conversion run by LiteRT instead, on `lite_threads` threads (0: as many as the process has
    cores; LiteRT's own default is one) with its default CPU delegate, XNNPACK, on the float ops (full_int8
    calibrated on the first `serving_inputs.CALIBRATION_TEXTS` SST-2 training sentences). `model_dir`: the
    fine-tuned model (`serving_inputs.fine_tune`'s Hugging Face directory).

    Returns: batch-1 latencies over `latency_texts` (seconds each), seconds per pass over all texts in batches of
    `batch_size`, and the label of every text.
    """
    import tempfile

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the in-graph tokenizer's kernels)

    from benchmarks.perf import serving_inputs
    from export.classifier_module import ClassifierModule
    from export.saved_model import save
    from official_bert.checkpoints import load_encoder
    from official_bert.checkpoints.vocab import find_vocab
    from official_bert.models import BertClassifier
    from official_bert.text import text_preprocessor

    texts = serving_inputs.serving_texts()
    encoder, config = load_encoder(model_dir)
    model = BertClassifier(encoder, len(serving_inputs.LABELS))
    model.head.set_weights(list(serving_inputs.head_weights(model_dir)))
    with tempfile.TemporaryDirectory() as work_dir:
        tokens, lower_case, _ = find_vocab(model_dir)
        vocab_file = os.path.join(work_dir, "vocab.txt")
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in tokens))
        preprocessor = text_preprocessor(vocab_file, lower_case is not False, serving_inputs.MAX_SEQ_LENGTH)
        module = ClassifierModule(model, preprocessor, serving_inputs.LABELS, False, ("text",),
                                  {"vocab.txt": vocab_file}, jit_compile=jit_compile)
        version_dir = save(module, os.path.join(work_dir, "export"))
        if lite is not None:
            return _serving_lite(version_dir, lite, texts, latency_texts, batch_size, repeats, lite_threads)
        serve = tf.saved_model.load(version_dir).signatures["serving_default"]
        if jit_compile:
            from export.warmup import WARMUP_FILE, read_warmup_file

            for signature, inputs in read_warmup_file(os.path.join(version_dir, "assets.extra", WARMUP_FILE)):
                if signature == "serving_default":
                    serve(text=tf.constant(inputs["text"].astype(str)))

        def classify(batch):
            return serve(text=tf.constant(batch))["label_id"].numpy()

        return serving_inputs.time_classifier(classify, texts, latency_texts, batch_size, repeats)


def _serving_lite(version_dir, quantize, texts, latency_texts, batch_size, repeats, threads):
    """`serving`'s timing of the export's TFLite conversion (`quantize`) in LiteRT."""
    import numpy as np

    from benchmarks.perf import serving_inputs
    from export import tflite

    calibration = None
    if quantize == "full_int8":
        calibration = [(text,) for text in serving_inputs.serving_texts(serving_inputs.CALIBRATION_TSV)[
            :serving_inputs.CALIBRATION_TEXTS]]
    model = tflite.convert(version_dir, "serving_default", quantize, calibration)
    threads = threads or len(os.sched_getaffinity(0))  # the cores TensorFlow and PyTorch use
    runner = tflite.interpreter(model, num_threads=threads).get_signature_runner("serving_default")

    def classify(batch):
        return runner(text=np.array(batch, dtype=object))["label_id"]

    timing = serving_inputs.time_classifier(classify, texts, latency_texts, batch_size, repeats)
    return {"model_bytes": len(model), "lite_threads": threads, **timing}
