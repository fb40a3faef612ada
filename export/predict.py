"""Asks an exported SavedModel one question, the way a client would, and prints the answer as JSON.

    python -m export.predict --export_dir=out/export/sst2 "a charming and often affecting journey"
    python -m export.predict --export_dir=out/export/mrpc/1 "The cat sat." "A cat was sitting."
    python -m export.predict --export_dir=out/export/squad "Who flew?" "Peter Blackburn flew to Brussels."
    python -m export.predict --export_dir=out/export/pretraining "The cat sat on the [MASK]."
    python -m export.predict --export_dir=out/export/swag "A drum line" "passes by." "turns the corner." "sings."
    python -m export.predict --export_dir=out/export/motions --features_file=new_walks.npz

--export_dir is a version directory, or the base directory (its highest numeric version is used). The
texts go to `serving_default` in order (`text`, then `text_b`; SQuAD: `question`, then `context`; multiple
choice: `context`, then every choice, where a question without a context sends the question first); the JSON
holds that one example's outputs: strings decoded as UTF-8, by default only the outputs with at most one
value per word, entity, class or answer, and the masked LM's top-k lists (`--outputs=sequence_output,...`
names others, e.g. the encoder's `sequence_output`, the tagger's `logits` or SQuAD's `start_logits`).
An export of sequences of feature vectors (`tasks.run_time_series_classifier`) takes no text: `--features_file`
names a `.npz` file in the training format (`features` (N, time, channels), optional `lengths`; labels are
ignored), and one JSON line is printed per sequence, in the file's order.
"""

import json
import logging
import os
import sys

from absl import app, flags


def resolve_version_dir(export_dir):
    """`export_dir` itself if it holds a SavedModel, else its highest numeric version subdirectory."""
    if os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    versions = sorted(int(n) for n in os.listdir(export_dir) if n.isdigit()) if os.path.isdir(export_dir) else []
    if not versions:
        raise FileNotFoundError(f"{export_dir}: no saved_model.pb and no numeric version directory")
    return os.path.join(export_dir, str(versions[-1]))


class _WithoutUnsavedGradientNotes(logging.Filter):
    """Drops TensorFlow's "Importing a function (...) with ops with unsaved custom gradients" warnings, one per
    function of an int8 export: Keras' int8 layers wrap their matmuls in a custom gradient, and exports are saved
    without gradients on purpose (`export.ops.serving_save_options`); predicting asks for none."""

    def filter(self, record):
        return "with ops with unsaved custom gradients" not in record.getMessage()


def load(version_dir):
    """`tf.saved_model.load` of an export, without the unsaved-custom-gradient warnings (see above)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers FastBertNormalize / FastWordpieceTokenizeWithOffsets)
    from absl import logging as absl_logging

    notes, logger = _WithoutUnsavedGradientNotes(), absl_logging.get_absl_logger()  # (TF logs them through absl)
    logger.addFilter(notes)
    try:
        return tf.saved_model.load(version_dir)
    finally:
        logger.removeFilter(notes)


# Left out by default: one value per position of the packed sequence (SQuAD's span logits).
_PER_POSITION_OUTPUTS = ("start_logits", "end_logits")


def _default_output(name, value):
    """Printed without --outputs: rank <= 2 (per class, word or entity), or the masked LM's top-k lists."""
    if name in _PER_POSITION_OUTPUTS:
        return False
    return value.shape.rank <= 2 or name.startswith("top_k_")


def _jsonable(value):
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        value = value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def predict(export_dir, texts, output_names=None):
    """Runs `serving_default` on one example.

    Args:
        export_dir: a version directory or the base directory.
        texts: the example's strings (or UTF-8 bytes), one per text input of the signature, in order.
        output_names: outputs to return; None: those of rank <= 2 (one value per class, word, entity or
            answer) but SQuAD's per-position `start_logits` / `end_logits`, and the masked LM's `top_k_*`.

    Returns:
        dict output name -> JSON-ready value for this example.
    """
    import tensorflow as tf

    model = load(resolve_version_dir(export_dir))
    signature = model.signatures["serving_default"]
    if "features" in signature.structured_input_signature[1]:
        raise ValueError(f"{export_dir}: serving_default takes feature sequences, not texts; pass --features_file "
                         f"(predict_features)")
    # The module's positional TFLite twin keeps the inputs' order (text, text_b); the signature's dict does not.
    specs = model.tflite_serving_default.concrete_functions[0].structured_input_signature[0]
    order = [spec.name for spec in specs]
    if specs[-1].shape.rank == 2:  # multiple choice: the context, then [1, n] choices
        if len(texts) < len(order):
            raise ValueError(f"the model takes a {order[0]} and at least one of its {order[-1]}, got {len(texts)} "
                             f"text(s)")
        feeds = {order[0]: tf.constant([texts[0]]), order[-1]: tf.constant([list(texts[1:])])}
    elif len(texts) != len(order):
        raise ValueError(f"the model takes {len(order)} text(s) ({', '.join(order)}), got {len(texts)}")
    else:
        feeds = {name: tf.constant([text]) for name, text in zip(order, texts)}
    outputs = signature(**feeds)
    if output_names is None:
        output_names = [name for name, value in outputs.items() if _default_output(name, value)]
    _check_output_names(outputs, output_names)
    return {name: _jsonable(outputs[name].numpy()[0]) for name in sorted(output_names)}


def _check_output_names(outputs, output_names):
    unknown = set(output_names) - set(outputs)
    if unknown:
        raise ValueError(f"no output(s) {sorted(unknown)}; the signature has {sorted(outputs)}")


def predict_features(export_dir, features_file, output_names=None, batch_size=64):
    """Runs `serving_default` of an export of feature sequences on every sequence of a `.npz` file.

    Args:
        export_dir: a version directory or the base directory.
        features_file: a `.npz` file as `tasks.run_time_series_classifier` reads (`features` (N, time, channels),
            optional `lengths` (N)); labels, if any, are ignored.
        output_names: outputs to return; None: `label`, `label_id` and `probabilities`.
        batch_size: sequences a call.

    Returns:
        one dict output name -> JSON-ready value per sequence, in the file's order.
    """
    import tensorflow as tf

    from official_bert.data.time_series import fit_to_model, read_time_series

    model = load(resolve_version_dir(export_dir))
    signature = model.signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    if "features" not in specs:
        raise ValueError(f"{export_dir}: serving_default takes {sorted(specs)}, not feature sequences; pass texts")
    # The TFLite twin's features spec fixes time at the model's longest sequence: (batch, max_time, channels).
    _, max_time, channels = model.tflite_serving_default.concrete_functions[0].structured_input_signature[0][0].shape
    examples = read_time_series(features_file)
    fit_to_model(examples, channels, max_time)
    output_names = ["label", "label_id", "probabilities"] if output_names is None else output_names
    answers = []
    for start in range(0, len(examples), batch_size):
        batch = slice(start, start + batch_size)
        outputs = signature(features=tf.constant(examples.features[batch], tf.float32),
                            lengths=tf.constant(examples.lengths[batch], tf.int32))
        _check_output_names(outputs, output_names)
        values = {name: outputs[name].numpy() for name in sorted(output_names)}
        answers.extend({name: _jsonable(value[i]) for name, value in values.items()}
                       for i in range(len(examples.lengths[batch])))
    return answers


def main(argv):
    if not flags.FLAGS.export_dir:
        raise app.UsageError("--export_dir is required")
    if flags.FLAGS.features_file and len(argv) > 1:
        raise app.UsageError("pass texts or --features_file, not both")
    # Command-line bytes that are not UTF-8 reach Python as surrogates: send the original bytes.
    texts = [arg.encode("utf-8", errors="surrogateescape") for arg in argv[1:]]
    names = flags.FLAGS.outputs.split(",") if flags.FLAGS.outputs else None
    try:
        if flags.FLAGS.features_file:
            answers = predict_features(flags.FLAGS.export_dir, flags.FLAGS.features_file, names)
        else:
            answers = [predict(flags.FLAGS.export_dir, texts, names)]
    except (ValueError, FileNotFoundError) as e:
        raise app.UsageError(str(e))
    for answer in answers:
        json.dump(answer, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    flags.DEFINE_string("export_dir", None, "A version directory, or the base directory (latest version).")
    flags.DEFINE_string("features_file", None, "An export of feature sequences: a .npz file of sequences to "
                        "classify (features, optional lengths); one JSON line per sequence.")
    flags.DEFINE_string("outputs", None, "Comma-separated outputs to print; default: those of rank <= 2 (but "
                        "start_logits / end_logits) and top_k_*.")
    run_main(main)
