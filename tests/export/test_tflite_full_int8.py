"""export.tflite --quantize=full_int8: calibrated on MRPC's own sentence pairs; the dense layers in int8 except each
transformer layer's feed-forward output projection, which stays float32; the same tokenization and nearly the same
answers as the float model."""

import numpy as np
import pytest

from export import tflite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mrpc_pairs(shared_data, tmp_path_factory):
    """The first 40 MRPC dev pairs as a representative file (two tab-separated texts a line)."""
    rows = (shared_data / "glue" / "MRPC" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:41]
    path = tmp_path_factory.mktemp("representative") / "mrpc.txt"
    path.write_text("".join("\t".join(row.split("\t")[3:5]) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def full_int8(exports, mrpc_pairs):
    """Two full_int8 conversions of the tiny classifier: (the two models, the two calibrated models each was
    quantized from)."""
    examples = tflite.read_representative_file(str(mrpc_pairs))
    calibrated = []
    quantize = tflite._quantize_calibrated
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tflite, "_quantize_calibrated",
                      lambda model, saved_model_dir: quantize(calibrated.append(model) or model, saved_model_dir))
        models = [tflite.convert(exports["classifier"], "serving_default", "full_int8", examples) for _ in range(2)]
    return models, calibrated


@pytest.fixture(scope="module")
def plain(exports):
    """The tiny classifier converted without quantization."""
    return tflite.convert(exports["classifier"], "serving_default", "none")


def test_full_int8_runs_with_int8_activations(full_int8, plain, mrpc_pairs):
    from tensorflow.lite.python import schema_py_generated as schema

    examples = tflite.read_representative_file(str(mrpc_pairs))
    assert len(examples) == 40 and all(len(example) == 2 for example in examples)
    full = full_int8[0][0]
    assert tflite.custom_ops(full) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    model = schema.ModelT.InitFromPackedBuf(full, 0)
    int8 = [t for t in model.subgraphs[0].tensors if t.type == schema.TensorType.INT8]
    activations = [t for t in int8 if model.buffers[t.buffer].data is None]  # computed, not stored
    # the int8 projections' inputs at least, besides the stored int8 weights
    assert len(activations) >= 5 and len(int8) - len(activations) >= 5, (len(activations), len(int8))
    assert len(full) < len(plain)

    weight_types = {}  # fully connected output name -> its kernel's type
    for name, op, subgraph in tflite.operators(full):
        if name == "FULLY_CONNECTED":
            weight_types[subgraph.tensors[op.outputs[0]].name.decode()] = subgraph.tensors[op.inputs[1]].type
    expected = set(tflite.feed_forward_outputs(tflite.operators(plain)))
    feed_forward_out = {n: t for n, t in weight_types.items() if n in expected}
    assert len(feed_forward_out) == 1  # one per layer of the tiny classifier
    assert set(feed_forward_out.values()) == {schema.TensorType.FLOAT32}
    others = {t for n, t in weight_types.items() if n not in feed_forward_out}
    assert others == {schema.TensorType.INT8}  # attention projections, feed-forward input, pooler, head

    texts, second = (np.array([example[i] for example in examples[:8]], object) for i in (0, 1))
    lite = tflite.interpreter(full).get_signature_runner("serving_default")(text=texts, text_b=second)
    reference = tflite.interpreter(plain).get_signature_runner("serving_default")(text=texts, text_b=second)
    # The bound holds for any random tiny classifier, not only this one: over 20 of them (seeds 1-20, two
    # byte-identical conversions each) the largest difference was 0.230, mean 0.051, sd 0.049, and 0.25 is about
    # mean + 4 sd (`python -m benchmarks.full_int8_spread`). This model's (seed 1) is 0.064.
    np.testing.assert_allclose(lite["probabilities"], reference["probabilities"], atol=0.25)
    np.testing.assert_array_equal(lite["truncated"], reference["truncated"])


def test_calibration_reads_the_representative_texts_as_given(full_int8, plain, mrpc_pairs):
    """The calibrated range of each embedding lookup is the one the float model itself produces on those texts, and
    two conversions calibrate alike (fed as tf.constant, the calibrator tokenized other text from run to run)."""
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    import tensorflow_text

    examples = tflite.read_representative_file(str(mrpc_pairs))
    models, calibrated = full_int8
    assert len(models) == len(calibrated) == 2
    assert models[0] == models[1] and calibrated[0] == calibrated[1]

    lookups = {}  # embedding lookup output name -> calibrated (min, max)
    for name, op, subgraph in tflite.operators(calibrated[0]):
        output = subgraph.tensors[op.outputs[0]]
        if name == "GATHER" and output.quantization is not None and output.quantization.min is not None:
            lookups[output.name.decode()] = (output.quantization.min[0], output.quantization.max[0])
    assert lookups  # word, position and token type embeddings

    float_model = InterpreterWithCustomOps(custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                                           model_content=plain, experimental_preserve_all_tensors=True)
    runner = float_model.get_signature_runner("serving_default")
    index = {detail["name"]: detail["index"] for detail in float_model.get_tensor_details()}
    seen = {name: [] for name in lookups}
    for text, text_b in examples:
        runner(text=np.array([text.encode()]), text_b=np.array([text_b.encode()]))
        for name in lookups:
            seen[name].append(float_model.get_tensor(index[name]))
    for name, (low, high) in lookups.items():
        assert low == pytest.approx(min(v.min() for v in seen[name]))
        assert high == pytest.approx(max(v.max() for v in seen[name]))


def test_full_int8_refuses_a_graph_without_the_feed_forward_output(exports, mrpc_pairs, monkeypatch):
    """Quantizing every dense layer would lose the model's accuracy: without the layer to keep float, no model."""
    monkeypatch.setattr(tflite, "feed_forward_outputs", lambda graph: [])
    with pytest.raises(ValueError, match="feed-forward output"):
        tflite.convert(exports["classifier"], "serving_default", "full_int8",
                       tflite.read_representative_file(str(mrpc_pairs)))


def test_a_representative_pair_is_tab_separated_or_split_at_three_bars_as_predict_reads_it(tmp_path, caplog):
    (tmp_path / "texts.txt").write_text("A cat. ||| A dog.\n\nOne\tTwo\nAlone\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="export.tflite"):
        examples = tflite.read_representative_file(str(tmp_path / "texts.txt"))
    assert examples == [("A cat.", "A dog."), ("One", "Two"), ("Alone",)] and examples.lines == [1, 3, 4]
    assert "texts.txt holds 3 example(s); full_int8 calibrates its activation scales on up to 200" in caplog.text
    (tmp_path / "bad.txt").write_text("A\na ||| b ||| c\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: 2 '\|\|\|' separators"):
        tflite.read_representative_file(str(tmp_path / "bad.txt"))


def test_full_int8_needs_representative_texts(exports, tmp_path):
    with pytest.raises(ValueError, match="--representative_file"):
        tflite.convert(exports["classifier"], "serving_default", "full_int8")
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no text"):
        tflite.read_representative_file(str(tmp_path / "empty.txt"))
