"""Tokenizer + packer as a serving graph: SavedModel in a fresh process, allowed ops only, TFLite."""

import json
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from official_bert.text import BertPackInputs
import text_corpora as corpora
from tests.tasks.forked_commands import run_python

SEQ_LENGTH = 24
# Core TF ops the preprocessing graph may use (all have TFLite builtin equivalents) + the two tf-text
# kernels that TFLite's tf-text registrar and TF Serving's pinned tf-text provide.
ALLOWED_OPS = {
    "FastBertNormalize", "FastWordpieceTokenizeWithOffsets",
    "AddV2", "Cast", "ConcatV2", "Const", "Cumsum", "Equal", "Fill", "GatherV2", "Greater", "GreaterEqual",
    "Identity", "IdentityN", "Less", "LessEqual", "LogicalAnd", "LogicalNot", "LogicalOr", "Maximum",
    "Minimum", "Mul", "NoOp", "OnesLike", "Pack", "Placeholder", "Range", "Reshape", "ScatterNd",
    "SelectV2", "Shape", "StridedSlice", "Sub", "Sum", "UnsortedSegmentSum", "Where",
    "ZerosLike", "StatefulPartitionedCall", "PartitionedCall",
}


class Preprocessor(tf.Module):
    """What an export ships: raw strings in, encoder inputs (and token offsets) out."""

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer
        self.packer = BertPackInputs(SEQ_LENGTH, tokenizer.get_special_tokens_dict())

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    def pack_pair(self, first, second):
        return self.packer([self.tokenizer(first), self.tokenizer(second)])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, text):
        ids, starts, ends = self.tokenizer(text, with_offsets=True)
        return {"ids": ids.values, "starts": starts.values, "ends": ends.values, "row_splits": ids.row_splits}


@pytest.fixture(scope="module")
def preprocessor(tokenizer):
    return Preprocessor(tokenizer)


@pytest.fixture(scope="module")
def texts(shared_data):
    pairs = corpora.mrpc_pairs(shared_data, "dev")[:64]
    hard = corpora.hard_cases()[:120]
    return [p[0] for p in pairs] + hard, [p[1] for p in pairs] + hard[::-1]


def _eager(preprocessor, first, second):
    out = {k: v.numpy() for k, v in preprocessor.pack_pair(tf.constant(first), tf.constant(second)).items()}
    out.update({k: v.numpy() for k, v in preprocessor.tokenize(tf.constant(first)).items()})
    return out


def _graph_ops(concrete_function):
    graph_def = concrete_function.graph.as_graph_def()
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


def test_graph_uses_only_serving_safe_ops(preprocessor):
    for function in (preprocessor.pack_pair, preprocessor.tokenize):
        ops = _graph_ops(function.get_concrete_function())
        assert {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"} <= ops
        assert ops - ALLOWED_OPS == set()


@pytest.mark.slow
def test_saved_model_reloads_in_fresh_process(preprocessor, texts, tmp_path):
    first, second = texts
    tf.saved_model.save(preprocessor, str(tmp_path / "model"))
    (tmp_path / "inputs.json").write_text(json.dumps([first, second]), encoding="utf-8")
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        import tensorflow_text  # registers the kernels; nothing else is imported
        first, second = json.load(open({str(tmp_path / "inputs.json")!r}, encoding="utf-8"))
        model = tf.saved_model.load({str(tmp_path / "model")!r})
        out = {{k: v.numpy() for k, v in model.pack_pair(tf.constant(first), tf.constant(second)).items()}}
        out.update({{k: v.numpy() for k, v in model.tokenize(tf.constant(first)).items()}})
        np.savez({str(tmp_path / "out.npz")!r}, **out)
        print("official_bert" in sys.modules)
    """)
    result = run_python(["-c", script], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "False"
    reloaded = np.load(tmp_path / "out.npz")
    expected = _eager(preprocessor, first, second)
    assert set(reloaded.files) == set(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(reloaded[key], value, err_msg=key)


def test_tflite_without_flex_gives_identical_outputs(preprocessor, texts):
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    import tensorflow_text

    first, second = texts
    functions = [preprocessor.pack_pair.get_concrete_function(), preprocessor.tokenize.get_concrete_function()]
    converter = tf.lite.TFLiteConverter.from_concrete_functions(functions, preprocessor)
    converter.allow_custom_ops = True
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # no SELECT_TF_OPS (Flex)
    model = converter.convert()
    from tensorflow.lite.python import schema_py_generated as schema

    codes = schema.ModelT.InitFromPackedBuf(model, 0).operatorCodes
    custom = {c.customCode.decode() for c in codes if c.customCode}
    assert custom == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    interpreter = litert.InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_content=model)
    expected = _eager(preprocessor, first, second)
    signatures = interpreter.get_signature_list()
    assert set(signatures) == {"pack_pair", "tokenize"}
    outputs = dict(interpreter.get_signature_runner("pack_pair")(
        first=np.array(first, dtype=object), second=np.array(second, dtype=object)))
    outputs.update(interpreter.get_signature_runner("tokenize")(text=np.array(first, dtype=object)))
    assert set(outputs) == set(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value, err_msg=key)
