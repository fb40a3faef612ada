"""Converts an exported SavedModel signature to a TFLite model that runs in LiteRT with tf-text's kernels.

    python -m export.tflite --saved_model_dir=out/export/sst2/1 --output=out/sst2.tflite --quantize=dynamic_int8

`--saved_model_dir` is a version directory, or the export directory (its highest version, as `export.predict`).

The model takes the same raw strings as the SavedModel and runs in `ai_edge_litert`'s
`InterpreterWithCustomOps` with `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`: TFLite builtins plus
the two tf-text custom ops, no Flex (SELECT_TF_OPS) delegate. Conversion freezes the weights into
constants (TFLite's converter keeps Keras 3 variables as uninitialised VAR_HANDLEs otherwise).

- `--signature=serving_default` converts the module's TFLite form of it (`tflite_serving_default`): the
  same outputs, except that the tagger gives byte offsets only (no `entity_text`, no character offsets:
  TFLite has no string-slicing ops). String outputs (`label`, `word_labels`, `entity_type`) work. Like the
  SavedModel, it runs the model at the request's longest text (window): LiteRT resizes the tensors at each call.
- `--signature=serve_tokens` converts the token signature as it is. `serve_examples` cannot be converted
  (TFLite has no `ParseExampleV2`).
- A RoBERTa export (byte-level BPE in the graph) converts only `serve_tokens`: its tokenizer needs string ops
  and sorted-table lookups that LiteRT has no kernels for (`BPE_TFLITE_MISSING`), and the conversion says so.
- An ALBERT tagger or SQuAD export converts only `serve_tokens` too: the SentencePiece offsets they need are
  computed with ops LiteRT lacks (`UnicodeDecodeWithOffsets`, `LowerBound`, ...), which the conversion names. An
  ALBERT classifier (no offsets) converts from raw text.
- `--quantize`: `none` (float32), `float16` (weights stored as float16), `dynamic_int8` (weights int8,
  activations quantized on the fly), `full_int8` (weights and activations int8 with scales calibrated on
  `--representative_file`, texts of the task's own data: one example a line, a pair as two tab-separated fields
  or `text_a ||| text_b`). full_int8 runs in int8 the dense layers (attention
  projections, feed-forward input, pooler, head) and the embedding lookups (`FULL_INT8_OPS`), and keeps in
  float32, with (de)quantize ops between: each transformer layer's feed-forward output projection (its outputs
  carry BERT's activation outliers, which one int8 scale per tensor cannot hold: `feed_forward_outputs`), the
  attention scores, softmax and probabilities x values, LayerNorms, residual additions, GELU, the string
  inputs, the tokenizer and the outputs. Quantizing every op with an int8 kernel instead loses the model
  (all-MiniLM-L6-v2 on MRPC: 40% dev accuracy against 77%; docs/compression.md).
"""

import logging
import os
import tempfile

import numpy as np
from absl import flags

from export.ops import SENTENCEPIECE_OPS, TF_TEXT_OPS, serving_save_options
from official_bert.text_files import read_lines

logger = logging.getLogger(__name__)
QUANTIZATIONS = ("none", "float16", "dynamic_int8", "full_int8")
# Calibration examples full_int8 reads from the start of --representative_file.
MAX_REPRESENTATIVE_EXAMPLES = 200
REQUIRED_FLAGS = ("saved_model_dir", "output")
# The TFLite ops full_int8 runs with int8 kernels; every other op of the graph runs in float32.
FULL_INT8_OPS = ("FULLY_CONNECTED", "GATHER")
# The ops of RoBERTa's in-graph byte-level BPE (`official_bert.text.BytePairTokenizer`) that the TFLite converter
# (TFLITE_BUILTINS, allow_custom_ops) leaves as custom ops no LiteRT kernel implements (measured, TF 2.21).
BPE_TFLITE_MISSING = ("UnicodeDecodeWithOffsets", "StringSplit", "StringLength", "DecodeRaw", "LowerBound",
                      "UpperBound", "UnsortedSegmentMin", "UnsortedSegmentSum")


def _frozen_module(saved_model_dir, signature):
    """A variable-free tf.Module whose one function is `signature` of the SavedModel, outputs by name."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the kernels the SavedModel's graph needs)

    from official_bert import keras_compat

    weights = tf.train.load_checkpoint(os.path.join(saved_model_dir, "variables", "variables"))
    dtypes = set(weights.get_variable_to_dtype_map().values())
    if tf.bfloat16 in dtypes:
        raise ValueError(f"{saved_model_dir} holds bfloat16 weights (export.saved_model --precision=bfloat16), "
                         "which TFLite cannot run; convert a float32 export (--quantize=float16 halves its size)")
    if tf.int8 in dtypes:  # Keras' quantized layers: the converter fails on their ops
        raise ValueError(f"{saved_model_dir} holds int8 weights (export.saved_model --precision=int8), which the "
                         "TFLite converter cannot read; convert a float32 export (--quantize=dynamic_int8 or "
                         "full_int8 gives int8 weights)")
    loaded = tf.saved_model.load(saved_model_dir)
    if signature not in loaded.signatures:
        raise ValueError(f"{saved_model_dir} has no signature {signature!r}; it has {sorted(loaded.signatures)}")
    if signature == "serve_examples":
        raise ValueError("serve_examples cannot run in TFLite (no ParseExampleV2 kernel); convert serving_default")
    function = loaded.signatures[signature]  # keyword inputs
    specs = function.structured_input_signature[1]  # name -> TensorSpec
    names = list(specs)
    positional = signature == "serving_default" and hasattr(loaded, "tflite_serving_default")
    if positional:  # the module's TFLite form of serving_default, a tf.function of positional inputs
        function = loaded.tflite_serving_default.concrete_functions[0]
        names = [spec.name for spec in function.structured_input_signature[0]]
        specs = {spec.name: spec for spec in function.structured_input_signature[0]}  # its own (e.g. ranked) specs
    structure = function.structured_outputs  # name -> Tensor
    frozen = keras_compat.freeze_variables(function)

    def serve(**inputs):
        outputs = frozen(*[inputs[name] for name in names]) if positional else frozen(**inputs)
        return tf.nest.pack_sequence_as(structure, tf.nest.flatten(outputs))

    module = tf.Module()
    module.serve = tf.function(serve, autograph=False).get_concrete_function(**specs)
    return module


class RepresentativeTexts(list):
    """Calibration examples, each a tuple of its texts, that know their file and lines (for errors).

    Args:
        examples: the tuples of texts.
        source: the file.
        lines: each example's 1-based line.
    """

    def __init__(self, examples, source, lines):
        super().__init__(examples)
        self.source, self.lines = source, lines


def read_representative_file(path, limit=MAX_REPRESENTATIVE_EXAMPLES):
    """The first `limit` examples of a UTF-8 text file, one per non-blank line; a sentence pair (SQuAD: question,
    context) is two tab-separated fields, or `text_a ||| text_b` as `export.predict`'s `.txt` files.

    Returns:
        `RepresentativeTexts`.

    Raises:
        FileNotFoundError / ValueError: no file, a line that is not UTF-8, a malformed `|||` pair, or no non-empty
            line (named).
    """
    from official_bert.data.text_lines import SEPARATOR, parse_text_line

    if not os.path.isfile(path):
        raise FileNotFoundError(f"--representative_file={path} not found")
    examples, lines = [], []
    for lineno, line in read_lines(path):
        if len(examples) == limit:
            break
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if "\t" not in text and SEPARATOR in text:
            examples.append(parse_text_line(text, f"{path}:{lineno}"))
        else:
            examples.append(tuple(text.split("\t")))
        lines.append(lineno)
    if not examples:
        raise ValueError(f"--representative_file={path}: no text; full_int8 calibrates on texts of the task")
    if len(examples) < limit:
        logger.warning("--representative_file=%s holds %d example(s); full_int8 calibrates its activation scales on up "
                       "to %d of the task's own texts, and fewer may leave other texts outside them", path,
                       len(examples), limit)
    return RepresentativeTexts(examples, path, lines)


def _representative_dataset(function_inputs, examples):
    """`converter.representative_dataset`: batches of one example keyed by the signature's text inputs, the
    fields of a line in the order `text`, `text_b` (SQuAD: `question`, `context`).

    Raises:
        ValueError: an example with another number of texts than the signature takes, naming its file and line.
    """
    names = [name for name in ("text", "text_b", "question", "context") if name in function_inputs]
    names += sorted(set(function_inputs) - set(names))
    for i, example in enumerate(examples):
        if len(example) != len(names):
            where = (f"{examples.source}:{examples.lines[i]}" if isinstance(examples, RepresentativeTexts)
                     else f"representative example {i}")
            raise ValueError(f"{where}: {len(example)} text(s), but the signature takes {len(names)} "
                             f"({', '.join(names)}); a line holds one text, or a pair as two tab-separated fields "
                             f"or 'text_a ||| text_b'")

    def dataset():
        for example in examples:
            # UTF-8 bytes in a numpy array: the calibrator reads what it is fed exactly only so. With tf.constant it
            # tokenized other text from run to run (its ranges changed between conversions), with an object array
            # text of its own as well (ranges unlike the float model's own on the same texts).
            yield {name: np.array([text.encode("utf-8")]) for name, text in zip(names, example)}

    return dataset


def convert(saved_model_dir, signature="serving_default", quantize="none", representative_examples=None):
    """Converts one signature of an exported SavedModel to TFLite.

    Args:
        saved_model_dir: `<export_dir>/<version>` written by `export.saved_model`, or `<export_dir>` (its highest
            version, as `export.predict.resolve_version_dir` finds it).
        signature: `serving_default` or `serve_tokens`.
        quantize: one of `QUANTIZATIONS`.
        representative_examples: full_int8 only: calibration texts, tuples of one or two strings
            (`read_representative_file`).

    Returns:
        the .tflite flatbuffer, bytes; its one signature is named `signature`.

    Raises:
        FileNotFoundError: no such directory, or no export in it.
        ValueError: an unknown signature or quantization, or a graph op that is neither a TFLite builtin
            nor one of tf-text's WordPiece (or ALBERT's SentencePiece) kernels.
    """
    import tensorflow as tf

    from export.predict import resolve_version_dir

    saved_model_dir = resolve_version_dir(saved_model_dir)

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {QUANTIZATIONS}, got {quantize!r}")
    if quantize == "full_int8" and (signature != "serving_default" or not representative_examples):
        raise ValueError("full_int8 calibrates the serving_default signature on raw texts of the task: pass "
                         "--representative_file (and --signature=serving_default)")
    if signature != "serve_tokens" and os.path.isfile(os.path.join(saved_model_dir, "assets", "merges.txt")):
        raise ValueError(
            f"{saved_model_dir} tokenizes with RoBERTa's byte-level BPE, which LiteRT cannot run: its graph needs "
            f"{', '.join(BPE_TFLITE_MISSING)} (no TFLite builtins; only the Flex delegate, which the LiteRT Python "
            "interpreters lack, has them); convert --signature=serve_tokens (token ids in) and tokenize in the app")
    module = _frozen_module(saved_model_dir, signature)
    with tempfile.TemporaryDirectory() as frozen_dir:
        tf.saved_model.save(module, frozen_dir, signatures={signature: module.serve}, options=serving_save_options())
        converter = tf.lite.TFLiteConverter.from_saved_model(frozen_dir, signature_keys=[signature])
        converter.allow_custom_ops = True  # the tf-text kernels; anything else is rejected below
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # no Flex
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantize == "full_int8":
            import tensorflow_text

            from official_bert import keras_compat

            converter.representative_dataset = _representative_dataset(
                module.serve.structured_input_signature[1], representative_examples)
            # calibration runs the graph, tokenizer included: it needs tf-text's kernels. Calibrate only, then
            # quantize all but the float32 ops (what tf.lite.experimental.QuantizationDebugger's selective
            # quantization does; the debugger itself cannot run string inputs)
            keras_compat.calibrate_only(converter, tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
            model = _quantize_calibrated(converter.convert(), saved_model_dir)
        else:
            model = converter.convert()
    unexpected = custom_ops(model) - TF_TEXT_OPS - SENTENCEPIECE_OPS
    if unexpected:
        raise ValueError(f"signature {signature!r} of {saved_model_dir} needs ops TFLite lacks: {sorted(unexpected)}")
    return model


def _quantize_calibrated(calibrated, saved_model_dir):
    """full_int8 of a calibrated float model: int8 kernels for `FULL_INT8_OPS` except `feed_forward_outputs`.

    Raises:
        ValueError: no feed-forward output layer found (quantizing it would lose the model's accuracy).
    """
    from official_bert import keras_compat

    graph = operators(calibrated)  # parsed once: the flatbuffer is the whole model, weights included
    float_ops = {name for name, _, _ in graph if name != "CUSTOM"} - set(FULL_INT8_OPS)
    float_nodes = feed_forward_outputs(graph)
    if not float_nodes:
        raise ValueError(f"{saved_model_dir}: no transformer feed-forward output layer (the widest dense input, "
                         "narrowed) found to keep in float32; full_int8 of every dense layer does not keep BERT's "
                         "accuracy")
    return keras_compat.quantize_calibrated(calibrated, denylisted_ops=sorted(float_ops), denylisted_nodes=float_nodes)


def feed_forward_outputs(graph):
    """The output tensor names of a .tflite's transformer feed-forward output projections: the fully connected ops
    that read the widest input of all (intermediate_size) and narrow it (to hidden_size).

    Args:
        graph: `operators(model)` of the .tflite.

    Their outputs carry BERT's activation outliers: in all-MiniLM-L6-v2 they reach +-116 where most values are
    within +-1, so one int8 scale per tensor wipes out the rest of the residual stream (MRPC dev accuracy 40%
    against 77% in float).
    """
    dense = [(subgraph.tensors[op.inputs[1]].shape, subgraph.tensors[op.outputs[0]].name.decode())
             for name, op, subgraph in graph if name == "FULLY_CONNECTED"]  # kernel (out, in)
    widest = max((shape[1] for shape, _ in dense), default=0)
    return [output for shape, output in dense if shape[1] == widest and shape[0] < widest]


def operators(model):
    """`(builtin op name, operator, its subgraph)` of every operator of a .tflite flatbuffer (bytes); custom ops are
    named CUSTOM."""
    from official_bert import keras_compat

    schema = keras_compat.tflite_schema()
    names = {code: name for name, code in vars(schema.BuiltinOperator).items() if not name.startswith("_")}
    parsed = schema.ModelT.InitFromPackedBuf(model, 0)
    codes = [names[max(code.builtinCode, code.deprecatedBuiltinCode)] for code in parsed.operatorCodes]
    return [(codes[op.opcodeIndex], op, subgraph) for subgraph in parsed.subgraphs for op in subgraph.operators]


def custom_ops(model):
    """The custom op names a .tflite flatbuffer (bytes) uses."""
    from official_bert import keras_compat

    codes = keras_compat.tflite_schema().ModelT.InitFromPackedBuf(model, 0).operatorCodes
    return {code.customCode.decode() for code in codes if code.customCode}


def interpreter(model_content=None, model_path=None, num_threads=None):
    """A LiteRT interpreter with tf-text's kernels registered, tensors allocated.

    Args:
        model_content, model_path: the .tflite flatbuffer (bytes), or its file.
        num_threads: the threads of LiteRT's kernels and XNNPACK; None: LiteRT's default, one thread.
    """
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    result = InterpreterWithCustomOps(custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                                      model_content=model_content, model_path=model_path, num_threads=num_threads)
    result.allocate_tensors()
    return result


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.output_files import prepare_output_file, writing

    check_command_line(argv, required=REQUIRED_FLAGS)
    examples = None
    if flags.FLAGS.representative_file:
        examples = read_representative_file(flags.FLAGS.representative_file)
    prepare_output_file("output", flags.FLAGS.output, flags.FLAGS.overwrite)  # before the conversion (minutes)
    model = convert(flags.FLAGS.saved_model_dir, flags.FLAGS.signature, flags.FLAGS.quantize, examples)
    with writing("output", flags.FLAGS.output), open(flags.FLAGS.output, "wb") as f:
        f.write(model)
    print(f"wrote {flags.FLAGS.output} ({len(model) / 2**20:.1f} MiB, signature {flags.FLAGS.signature}, "
          f"quantize={flags.FLAGS.quantize})")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    flags.DEFINE_string("saved_model_dir", None, "A version directory written by export.saved_model, or its "
                        "export directory (the highest version).")
    flags.DEFINE_string("output", None, "The .tflite file to write; an existing file only with --overwrite.")
    flags.DEFINE_boolean("overwrite", False, "Replace an existing --output file.")
    flags.DEFINE_enum("quantize", "none", QUANTIZATIONS, "Weight quantization (full_int8: activations too, "
                      "calibrated on --representative_file).")
    flags.DEFINE_string("representative_file", None, "full_int8: a UTF-8 file of the task's texts, one example per "
                        "line (a pair: two tab-separated fields, or 'text_a ||| text_b'); the first "
                        f"{MAX_REPRESENTATIVE_EXAMPLES} are used.")
    flags.DEFINE_enum("signature", "serving_default", ["serving_default", "serve_tokens"], "Signature to convert.")
    run_main(main, required=REQUIRED_FLAGS)
