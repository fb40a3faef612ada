"""The models on Keras backends other than TensorFlow (here torch; JAX in test_matmul_precision.py), with
TensorFlow blocked from import: the layers, the pre-training loss and our AdamW must not need it."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

_BLOCK_TENSORFLOW = "import sys\nsys.modules['tensorflow'] = None  # any `import tensorflow` now fails\n"
_END = "-- end of script --"  # printed after each script


def run_on_backend(backend, *scripts):
    """Runs `scripts` one after another (each in a namespace of its own) in one fresh process on Keras' `backend`
    ("torch" or "jax"), with TensorFlow blocked; returns the JSON each printed last, a list."""
    pytest.importorskip(backend)
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(REPO_ROOT))
    code = _BLOCK_TENSORFLOW + "".join(f"exec({textwrap.dedent(script)!r}, {{}})\nprint({_END!r}, flush=True)\n"
                                       for script in scripts)
    process = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    outputs = process.stdout.split(_END + "\n")[:-1]
    assert len(outputs) == len(scripts), process.stdout[-3000:]
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


@pytest.fixture(scope="module")
def torch_results(minilm_dir, shared_data):
    """Both checks' results, from one process (the torch and Keras imports cost seconds)."""
    minilm, pretrainer = run_on_backend("torch", _minilm_script(minilm_dir, shared_data), _PRETRAINER_SCRIPT)
    return {"minilm": minilm, "pretrainer": pretrainer}


def _minilm_script(minilm_dir, shared_data):
    return f"""
        import json
        import keras
        import numpy as np
        from official_bert.checkpoints import load_encoder

        encoder, _ = load_encoder({str(minilm_dir)!r})
        ref = np.load({str(shared_data / "reference" / "minilm_reference.npz")!r})
        out = encoder({{"input_word_ids": ref["mrpc_input_ids"], "input_mask": ref["mrpc_padding_mask"],
                        "input_type_ids": ref["mrpc_segment_ids"]}})
        real = ref["mrpc_padding_mask"].astype(bool)
        diff = np.abs(keras.ops.convert_to_numpy(out["sequence_output"]) - ref["mrpc_sequence_output"])[real].max()
        print(json.dumps({{"backend": keras.backend.backend(), "max_diff": float(diff)}}))
    """


def test_minilm_matches_transformers_on_the_torch_backend(torch_results):
    result = torch_results["minilm"]
    assert result["backend"] == "torch"
    assert result["max_diff"] <= 1e-5, result


_PRETRAINER_SCRIPT = """
        import json
        import keras
        import numpy as np
        from official_bert import BertConfig, BertEncoder, BertPretrainer
        from official_bert.optimization import create_optimizer

        keras.utils.set_random_seed(0)
        config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=40)
        model = BertPretrainer(BertEncoder(config))
        optimizer = create_optimizer(1e-2, total_steps=20, warmup_steps=0, clip_norm=1e-3)
        model.compile(optimizer=optimizer, jit_compile=False)
        rng = np.random.default_rng(0)
        x = {"input_word_ids": rng.integers(5, 100, (8, 16)).astype("int32"),
             "input_mask": np.ones((8, 16), "int32"), "input_type_ids": np.zeros((8, 16), "int32"),
             "masked_lm_positions": np.tile(np.arange(1, 4, dtype="int32"), (8, 1))}
        y = {"masked_lm_ids": rng.integers(5, 100, (8, 3)).astype("int32"),
             "masked_lm_weights": np.ones((8, 3), "float32"), "next_sentence_labels": np.zeros((8,), "int32")}
        before = [keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables]
        # One step at a tiny clip norm: the update is the clipped one (checked against numpy below).
        grads = [keras.ops.convert_to_numpy(g) for g in
                 optimizer._clip_gradients([keras.ops.ones(v.shape) for v in model.trainable_variables])]
        norm = float(np.sqrt(sum((g.astype("float64") ** 2).sum() for g in grads)))
        history = model.fit(x, y, batch_size=8, epochs=15, verbose=0)
        moved = sum(float(np.abs(keras.ops.convert_to_numpy(v) - b).max() > 0)
                    for v, b in zip(model.trainable_variables, before))
        print(json.dumps({"clipped_norm": norm, "losses": history.history["loss"], "moved": moved,
                          "variables": len(before)}))
    """


def test_pretrainer_trains_with_clipped_adamw_on_the_torch_backend(torch_results):
    result = torch_results["pretrainer"]
    assert result["clipped_norm"] == pytest.approx(1e-3, rel=1e-4)
    assert result["moved"] == result["variables"]
    assert result["losses"][-1] < result["losses"][0] - 0.5, result["losses"]
