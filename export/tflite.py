"""Converts an exported SavedModel signature to a TFLite model that runs in LiteRT with tf-text's kernels.

    python -m export.tflite --saved_model_dir=out/export/sst2/1 --output=out/sst2.tflite --quantize=dynamic_int8

The model takes the same raw strings as the SavedModel and runs in `ai_edge_litert`'s
`InterpreterWithCustomOps` with `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`: TFLite builtins plus
the two tf-text custom ops, no Flex (SELECT_TF_OPS) delegate. Conversion freezes the weights into
constants (TFLite's converter keeps Keras 3 variables as uninitialised VAR_HANDLEs otherwise).

- `--signature=serving_default` converts the module's TFLite form of it (`tflite_serving_default`): the
  same outputs, except that the tagger gives byte offsets only (no `entity_text`, no character offsets:
  TFLite has no string-slicing ops). String outputs (`label`, `word_labels`, `entity_type`) work.
- `--signature=serve_tokens` converts the token signature as it is. `serve_examples` cannot be converted
  (TFLite has no `ParseExampleV2`).
- `--quantize`: `none` (float32), `float16` (weights stored as float16), `dynamic_int8` (weights int8,
  activations quantized on the fly).
"""

import os
import tempfile

from absl import app, flags

from export.ops import TF_TEXT_OPS, serving_save_options

QUANTIZATIONS = ("none", "float16", "dynamic_int8")


def _frozen_module(saved_model_dir, signature):
    """A variable-free tf.Module whose one function is `signature` of the SavedModel, outputs by name."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the kernels the SavedModel's graph needs)
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    weights = tf.train.load_checkpoint(os.path.join(saved_model_dir, "variables", "variables"))
    if tf.bfloat16 in weights.get_variable_to_dtype_map().values():
        raise ValueError(f"{saved_model_dir} holds bfloat16 weights (export.saved_model --precision=bfloat16), "
                         "which TFLite cannot run; convert a float32 export (--quantize=float16 halves its size)")
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
    frozen = convert_variables_to_constants_v2(function)

    def serve(**inputs):
        outputs = frozen(*[inputs[name] for name in names]) if positional else frozen(**inputs)
        return tf.nest.pack_sequence_as(structure, tf.nest.flatten(outputs))

    module = tf.Module()
    module.serve = tf.function(serve).get_concrete_function(**specs)
    return module


def convert(saved_model_dir, signature="serving_default", quantize="none"):
    """Converts one signature of an exported SavedModel to TFLite.

    Args:
        saved_model_dir: `<export_dir>/<version>` written by `export.saved_model`.
        signature: `serving_default` or `serve_tokens`.
        quantize: one of `QUANTIZATIONS`.

    Returns:
        the .tflite flatbuffer, bytes; its one signature is named `signature`.

    Raises:
        ValueError: an unknown signature or quantization, or a graph op that is neither a TFLite builtin
            nor one of the two tf-text kernels.
    """
    import tensorflow as tf

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {QUANTIZATIONS}, got {quantize!r}")
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
        model = converter.convert()
    unexpected = custom_ops(model) - TF_TEXT_OPS
    if unexpected:
        raise ValueError(f"signature {signature!r} of {saved_model_dir} needs ops TFLite lacks: {sorted(unexpected)}")
    return model


def custom_ops(model):
    """The custom op names a .tflite flatbuffer (bytes) uses."""
    from tensorflow.lite.python import schema_py_generated as schema

    codes = schema.ModelT.InitFromPackedBuf(model, 0).operatorCodes
    return {code.customCode.decode() for code in codes if code.customCode}


def interpreter(model_content=None, model_path=None):
    """A LiteRT interpreter with tf-text's kernels registered, tensors allocated."""
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    result = InterpreterWithCustomOps(custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                                      model_content=model_content, model_path=model_path)
    result.allocate_tensors()
    return result


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    for name in ("saved_model_dir", "output"):
        if not getattr(flags.FLAGS, name):
            raise app.UsageError(f"--{name} is required")
    model = convert(flags.FLAGS.saved_model_dir, flags.FLAGS.signature, flags.FLAGS.quantize)
    os.makedirs(os.path.dirname(os.path.abspath(flags.FLAGS.output)), exist_ok=True)
    with open(flags.FLAGS.output, "wb") as f:
        f.write(model)
    print(f"wrote {flags.FLAGS.output} ({len(model) / 2**20:.1f} MiB, signature {flags.FLAGS.signature}, "
          f"quantize={flags.FLAGS.quantize})")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    flags.DEFINE_string("saved_model_dir", None, "A version directory written by export.saved_model.")
    flags.DEFINE_string("output", None, "The .tflite file to write.")
    flags.DEFINE_enum("quantize", "none", QUANTIZATIONS, "Weight quantization.")
    flags.DEFINE_enum("signature", "serving_default", ["serving_default", "serve_tokens"], "Signature to convert.")
    run_main(main)
