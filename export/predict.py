"""Asks an exported SavedModel, the way a client would, one example or a file of them, and prints the answers as JSON.

    python -m export.predict --export_dir=out/export/sst2 "a charming and often affecting journey"
    python -m export.predict --export_dir=out/export/mrpc/1 "The cat sat." "A cat was sitting."
    python -m export.predict --export_dir=out/export/squad "Who flew?" "Peter Blackburn flew to Brussels."
    python -m export.predict --export_dir=out/export/pretraining "The cat sat on the [MASK]."
    python -m export.predict --export_dir=out/export/swag "A drum line" "passes by." "turns the corner." "sings."
    python -m export.predict --export_dir=out/export/mrpc --input_file=pairs.csv   # a JSON line an example
    python -m export.predict --export_dir=out/export/motions --features_file=new_walks.npz

--export_dir is a version directory, or the base directory (its highest numeric version is used). The
texts go to `serving_default` in order (`text`, then `text_b`; SQuAD: `question`, then `context`; multiple
choice: `context`, then every choice, where a question without a context sends the question first); the JSON
holds that one example's outputs (strict JSON): strings decoded as UTF-8, an infinite or NaN number as null
(SQuAD's `score` for an empty context), by default only the outputs with at most one value per word, entity,
class or answer, and the masked LM's top-k lists (`--outputs=sequence_output,...` names others, e.g. the
encoder's `sequence_output`, the tagger's `logits` or SQuAD's `start_logits`).
`--input_file` answers a file of examples in batches of `--batch_size`, one JSON line per example in the file's
order, once every line was checked (a blank line is an error): `.txt` a text or `text_a ||| text_b` a line;
`.csv` / `.tsv` a header row naming the inputs' columns (`text`, `text_b`; SQuAD `question`, `context`;
`--columns=review` names others), other columns ignored; `.jsonl` an object a line keyed by the inputs or an
array of the texts in order; multiple choice: what `tasks.run_multiple_choice` reads (SWAG's `.csv` or `.jsonl`,
or `{"context": ..., "choices": [...]}` lines).
An export of sequences of feature vectors (`tasks.run_time_series_classifier`) takes no text: `--features_file`
names a `.npz` file in the training format (`features` (N, time, channels), optional `lengths`; labels are
ignored), and one JSON line is printed per sequence, in the file's order.
"""

import json
import logging
import math
import os
import sys

from absl import app, flags

from export.example_files import read_examples


def resolve_version_dir(export_dir):
    """`export_dir` itself if it holds a SavedModel, else its highest numeric version subdirectory.

    Raises:
        FileNotFoundError: no such directory, or no SavedModel in it, saying what it is instead (a model_dir).
    """
    from export.saved_model import numeric_versions
    from official_bert.model_dir import is_model_dir

    if os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    if not os.path.isdir(export_dir):
        raise FileNotFoundError(f"no such export directory: {export_dir}")
    if is_model_dir(export_dir):
        raise FileNotFoundError(f"{export_dir} is a model_dir of a training run, not an export: export it first "
                                f"(python -m export.saved_model --model_dir={export_dir}) and pass its --export_dir")
    versions = numeric_versions(export_dir)
    if not versions:
        raise FileNotFoundError(f"{export_dir}: no saved_model.pb and no numeric version directory (an export of "
                                f"python -m export.saved_model)")
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


REQUIRED_FLAGS = ("export_dir",)
# Left out by default: one value per position of the packed sequence (SQuAD's span logits).
_PER_POSITION_OUTPUTS = ("start_logits", "end_logits")


def _default_output(name, value):
    """Printed without --outputs: rank <= 2 (per class, word or entity), or the masked LM's top-k lists."""
    if name in _PER_POSITION_OUTPUTS:
        return False
    return value.shape.rank <= 2 or name.startswith("top_k_")


# A tagger's per-word and per-entity outputs [batch, most in the batch] and the output that counts each row's own.
_COUNTED = {"word_": "num_words", "entity_": "num_entities"}


def _own_part(name, row, counts, index):
    """An example's `row` of output `name` without the padding its batch gave it (a tagger's words and entities
    past its own count), so that an answer does not depend on the examples it was batched with."""
    for prefix, count in counts.items():
        if name.startswith(prefix):
            return row[:count[index]]
    return row


def _jsonable(value):
    """`value` (numpy arrays and scalars, bytes) as JSON values: strings decoded as UTF-8, an infinite or NaN number
    as None (JSON has no such numbers; SQuAD's `score` is -inf for an empty context)."""
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        value = value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_line(answer):
    """One answer (a dict of JSON-ready values, `TextSignature.__call__`'s) as a line of strict JSON, without its
    newline; a NaN or infinity left in it is a ValueError rather than JSON's invalid `NaN` / `-Infinity`."""
    return json.dumps(answer, ensure_ascii=False, allow_nan=False)


class TextSignature:
    """`serving_default` of a text export, fed examples given as their texts in the inputs' order.

    Args:
        export_dir: a version directory or the base directory.
    """

    def __init__(self, export_dir):
        model = load(resolve_version_dir(export_dir))
        self.signature = model.signatures["serving_default"]
        if "features" in self.signature.structured_input_signature[1]:
            raise ValueError(f"{export_dir}: serving_default takes feature sequences, not texts; pass "
                             f"--features_file (predict_features)")
        # The module's positional TFLite twin keeps the inputs' order (text, text_b); the signature's dict does not.
        specs = model.tflite_serving_default.concrete_functions[0].structured_input_signature[0]
        self.order = [spec.name for spec in specs]
        self.takes_choices = specs[-1].shape.rank == 2  # multiple choice: the context, then [batch, n] choices

    def problem(self, texts):
        """What is wrong with one example's texts for this signature, or None."""
        if self.takes_choices:
            if len(texts) < len(self.order):
                return (f"the model takes a {self.order[0]} and at least one of its {self.order[-1]}, got "
                        f"{len(texts)} text(s)")
        elif len(texts) != len(self.order):
            return f"the model takes {len(self.order)} text(s) ({', '.join(self.order)}), got {len(texts)}"
        return None

    def __call__(self, examples, output_names=None):
        """Answers a batch of examples (multiple choice: each with the same number of choices).

        Args:
            examples: a list of examples, each the list of its texts (str or UTF-8 bytes) in the inputs' order.
            output_names: outputs to return; None: those of rank <= 2 (one value per class, word, entity or
                answer) but SQuAD's per-position `start_logits` / `end_logits`, and the masked LM's `top_k_*`.

        Returns:
            one dict output name -> JSON-ready value per example, in order.
        """
        import tensorflow as tf

        for texts in examples:
            problem = self.problem(texts)
            if problem:
                raise ValueError(problem)
        if self.takes_choices:
            feeds = {self.order[0]: tf.constant([texts[0] for texts in examples]),
                     self.order[-1]: tf.constant([list(texts[1:]) for texts in examples])}  # [batch, n]
        else:
            feeds = {name: tf.constant([texts[i] for texts in examples]) for i, name in enumerate(self.order)}
        outputs = self.signature(**feeds)
        if output_names is None:
            output_names = [name for name, value in outputs.items() if _default_output(name, value)]
        _check_output_names(outputs, output_names)
        values = {name: outputs[name].numpy() for name in sorted(output_names)}
        counts = {prefix: outputs[count].numpy() for prefix, count in _COUNTED.items() if count in outputs}
        return [{name: _jsonable(_own_part(name, value[i], counts, i)) for name, value in values.items()}
                for i in range(len(examples))]


def predict(export_dir, texts, output_names=None):
    """Runs `serving_default` on one example.

    Args:
        export_dir: a version directory or the base directory.
        texts: the example's strings (or UTF-8 bytes), one per text input of the signature, in order.
        output_names: as `TextSignature.__call__`'s.

    Returns:
        dict output name -> JSON-ready value for this example.
    """
    return TextSignature(export_dir)([list(texts)], output_names)[0]


def predict_file(export_dir, input_file, output_names=None, batch_size=32, columns=None):
    """Runs `serving_default` on every example of a file (see `export.example_files.read_examples`), batch by
    batch.

    Args:
        export_dir: a version directory or the base directory.
        input_file: a `.txt`, `.csv`, `.tsv` or `.jsonl` file of examples (see `read_examples`).
        output_names: as `TextSignature.__call__`'s.
        batch_size: examples a call (multiple choice: consecutive examples with as many choices).
        columns: the file's columns (JSON fields) for the inputs, in order; None: named as the inputs.

    Yields:
        one dict output name -> JSON-ready value per example, in the file's order.
    """
    signature = TextSignature(export_dir)
    examples = read_examples(input_file, signature.order, columns, signature.takes_choices)
    if not examples:
        raise ValueError(f"{input_file}: no examples in the file")
    for number, texts in examples:  # every line checked before the first answer
        problem = signature.problem(texts)
        if problem:
            raise ValueError(f"{input_file}:{number}: {problem}")
    batch = []
    for _, texts in examples:
        if batch and (len(batch) == batch_size or len(texts) != len(batch[0])):
            yield from signature(batch, output_names)
            batch = []
        batch.append(texts)
    if batch:
        yield from signature(batch, output_names)


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


def check_inputs(texts, input_file, features_file, columns):
    """Raises `app.UsageError` unless the command line gives one kind of input, and `columns` only with a file.

    Args:
        texts: the texts on the command line; input_file, features_file, columns: those flags' values.
    """
    given = [name for name, value in [("texts", texts), ("--input_file", input_file),
                                      ("--features_file", features_file)] if value]
    if len(given) > 1:
        raise app.UsageError(f"pass one of texts, --input_file and --features_file, not {' and '.join(given)}")
    if columns and not input_file:
        raise app.UsageError("--columns names the columns of an --input_file; pass one, or leave --columns out")


def main(argv):
    from official_bert.cli import check_command_line

    check_command_line(None, required=REQUIRED_FLAGS)  # (argv holds the texts: no check of stray words)
    check_inputs(argv[1:], flags.FLAGS.input_file, flags.FLAGS.features_file, flags.FLAGS.columns)
    # Command-line bytes that are not UTF-8 reach Python as surrogates: send the original bytes.
    texts = [arg.encode("utf-8", errors="surrogateescape") for arg in argv[1:]]
    names = [name.strip() for name in flags.FLAGS.outputs.split(",")] if flags.FLAGS.outputs else None
    try:
        if flags.FLAGS.features_file:
            answers = predict_features(flags.FLAGS.export_dir, flags.FLAGS.features_file, names)
        elif flags.FLAGS.input_file:
            answers = predict_file(flags.FLAGS.export_dir, flags.FLAGS.input_file, names, flags.FLAGS.batch_size,
                                   flags.FLAGS.columns.split(",") if flags.FLAGS.columns else None)
        else:
            answers = [predict(flags.FLAGS.export_dir, texts, names)]
        for answer in answers:
            sys.stdout.write(json_line(answer) + "\n")
    except (ValueError, FileNotFoundError) as e:
        raise app.UsageError(str(e))


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    flags.DEFINE_string("export_dir", None, "A version directory, or the base directory (latest version).")
    flags.DEFINE_string("features_file", None, "An export of feature sequences: a .npz file of sequences to "
                        "classify (features, optional lengths); one JSON line per sequence.")
    flags.DEFINE_string("input_file", None, "A text export: a file of examples (.txt: a text or 'text_a ||| "
                        "text_b' a line; .csv/.tsv: a header naming the inputs, e.g. text,text_b; .jsonl: an object "
                        "keyed by the inputs); one JSON line per example, in the file's order.")
    flags.DEFINE_string("columns", None, "With --input_file (.csv, .tsv, .jsonl): the comma-separated columns that "
                        "hold the inputs, in order (e.g. review); default: the inputs' names.")
    flags.DEFINE_integer("batch_size", 32, "With --input_file: examples a call.", lower_bound=1)
    flags.DEFINE_string("outputs", None, "Comma-separated outputs to print; default: those of rank <= 2 (but "
                        "start_logits / end_logits) and top_k_*.")
    run_main(main, required=REQUIRED_FLAGS)
