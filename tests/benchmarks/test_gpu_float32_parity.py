"""`benchmarks.gpu_float32_parity --small` on the CPU, on Keras' JAX backend with TensorFlow blocked (as on the GPU
machine, which has none): our encoder read from a random transformers `BertModel` equals it at every matmul
precision (the CPU computes float32 matmuls in float32 at all of them), and the JSON has every row."""

import json

import pytest

from tests.models.test_other_backends import run_on_backend

pytestmark = pytest.mark.slow


def test_small_run_equals_transformers_at_every_precision_and_writes_its_json(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "parity.json"
    script = ("import json\nfrom benchmarks.gpu_float32_parity import main\n"
              f"main(['--small', '--batch_size=4', '--seq_length=32', '--out={out}'])\n"
              "print(json.dumps({'done': True}))\n")
    assert run_on_backend("jax", script) == [{"done": True}]
    result = json.loads(out.read_text())
    assert result["jax_device"].startswith("cpu") and result["torch_device"] == "cpu"
    assert result["shape"]["hidden_size"] == 64 and result["batch"] == [4, 32]
    for name in ("ours", "jax_default", "user_tf32"):
        assert result[name]["sequence_output"] < 1e-5 and result[name]["pooled_output"] < 1e-5, (name, result)
