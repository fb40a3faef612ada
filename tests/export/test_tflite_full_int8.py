"""export.tflite --quantize=full_int8: calibrated on MRPC's own sentence pairs, int8 weights and activations, the
same tokenization as the float model.

Its answers are not compared with the float model's: post-training static int8 of BERT activations is far off
(README: on all-MiniLM-L6-v2 the sentence embedding's cosine to float is ~0.03). `--precision=int8` SavedModels are
the close ones (test_int8_export.py)."""

import collections

import numpy as np
import pytest

from export import tflite


@pytest.fixture(scope="module")
def mrpc_pairs(shared_data, tmp_path_factory):
    """The first 40 MRPC dev pairs as a representative file (two tab-separated texts a line)."""
    rows = (shared_data / "glue" / "MRPC" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:41]
    path = tmp_path_factory.mktemp("representative") / "mrpc.txt"
    path.write_text("".join("\t".join(row.split("\t")[3:5]) + "\n" for row in rows), encoding="utf-8")
    return path


def test_full_int8_runs_with_int8_activations(exports, mrpc_pairs):
    from tensorflow.lite.python import schema_py_generated as schema

    examples = tflite.read_representative_file(str(mrpc_pairs))
    assert len(examples) == 40 and all(len(example) == 2 for example in examples)
    full = tflite.convert(exports["classifier"], "serving_default", "full_int8", examples)
    plain = tflite.convert(exports["classifier"], "serving_default", "none")
    assert tflite.custom_ops(full) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    tensor_types = collections.Counter(t.type for t in schema.ModelT.InitFromPackedBuf(full, 0).subgraphs[0].tensors)
    assert tensor_types[schema.TensorType.INT8] > 50  # weights and activations, not only weights
    assert len(full) < len(plain)
    texts, second = (np.array([example[i] for example in examples[:8]], object) for i in (0, 1))
    lite = tflite.interpreter(full).get_signature_runner("serving_default")(text=texts, text_b=second)
    reference = tflite.interpreter(plain).get_signature_runner("serving_default")(text=texts, text_b=second)
    np.testing.assert_allclose(lite["probabilities"].sum(-1), 1.0, atol=1e-3)
    np.testing.assert_array_equal(lite["truncated"], reference["truncated"])


def test_full_int8_needs_representative_texts(exports, tmp_path):
    with pytest.raises(ValueError, match="--representative_file"):
        tflite.convert(exports["classifier"], "serving_default", "full_int8")
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no text"):
        tflite.read_representative_file(str(tmp_path / "empty.txt"))
