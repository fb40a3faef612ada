"""The encoder export's warm-up file: one request per signature (`embed` too), replayed by TF Serving's loader; and
one name, one meaning: `embedding` is `embed`'s L2-normalised sentence vector, the raw mean is `mean_pooled_output`."""

import collections
import pathlib

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from export.ops import signature_ops
from export.warmup import WARMUP_FILE, read_warmup_file
from tests.tasks.forked_commands import run_python

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SESSION_LOADER_CHECK = REPO_ROOT.parent / "shared" / "tools" / "session_loader_check.py"
pytestmark = pytest.mark.slow  # its fixture exports a model (seconds of tracing)


@pytest.fixture(scope="module")
def encoder_export(export_of):
    return export_of("encoder")  # the tiny checkpoint's, shared with test_session_loader.py


def test_the_warmup_file_has_one_request_per_signature(encoder_export):
    requests = read_warmup_file(pathlib.Path(encoder_export) / "assets.extra" / WARMUP_FILE)  # PredictionLog protos
    counts = collections.Counter(signature for signature, _ in requests)
    assert set(counts) == set(signature_ops(encoder_export)) == {"serving_default", "serve_examples", "serve_tokens",
                                                                  "embed"}
    assert set(counts.values()) == {1}
    embed = dict(requests)["embed"]
    assert set(embed) == {"text"} and embed["text"].shape == (2,)
    if SESSION_LOADER_CHECK.is_file():  # TF Serving's session loader replays every request
        check = run_python([SESSION_LOADER_CHECK, encoder_export], timeout=300)
        assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]


def test_embedding_names_the_normalised_vector_only(encoder_export):
    model = tf.saved_model.load(encoder_export)
    texts = tf.constant(["the cat sat on the mat", "a dog"])
    out = {k: v.numpy() for k, v in model.signatures["serving_default"](text=texts).items()}
    embed = model.signatures["embed"](text=texts)["embedding"].numpy()
    assert "embedding" not in out and {"pooled_output", "mean_pooled_output", "normalized_embedding"} <= set(out)
    mask = out["input_mask"][..., None]
    np.testing.assert_allclose(out["mean_pooled_output"], (out["sequence_output"] * mask).sum(1) / mask.sum(1),
                               atol=1e-5)
    np.testing.assert_allclose(out["normalized_embedding"], embed, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(embed, axis=-1), 1.0, atol=1e-5)
    assert not np.allclose(out["pooled_output"], out["mean_pooled_output"], atol=1e-3)  # the tanh pooler on [CLS]
