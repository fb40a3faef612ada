"""The encoder export's `embed` signature: raw text -> the Embedder's sentence embedding, in TF Serving's loader too."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

pytestmark = pytest.mark.slow
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SESSION_EMBED = """
import sys, json, numpy as np, tensorflow as tf, tensorflow_text
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    signature = tf.compat.v1.saved_model.loader.load(session, ["serve"], sys.argv[1]).signature_def["embed"]
    texts = np.array(json.loads(sys.argv[2]), dtype=object)
    out = session.run({k: v.name for k, v in signature.outputs.items()}, {signature.inputs["text"].name: texts})
np.save(sys.argv[3], out["embedding"])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("official_bert", "export", "tasks")))
"""


@pytest.fixture(scope="module")
def minilm_export(minilm_dir, tmp_path_factory):
    from export.saved_model import export

    return export(str(minilm_dir), str(tmp_path_factory.mktemp("minilm_embed")))


def test_embed_signature_equals_the_reference_and_the_embedder(minilm_export, minilm_dir, shared_data, tmp_path):
    from official_bert.pipelines import Embedder

    texts = json.loads((shared_data / "reference" / "minilm_reference_inputs.json").read_text())["sst2_texts"][:8]
    reference = np.load(shared_data / "reference" / "minilm_reference.npz")["sst2_sentence_embedding"][:8]
    embed = tf.saved_model.load(minilm_export).signatures["embed"]
    out = {k: v.numpy() for k, v in embed(text=tf.constant(texts)).items()}
    assert set(out) == {"embedding", "truncated"} and not out["truncated"].any()
    np.testing.assert_allclose(out["embedding"], reference, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["embedding"], Embedder.from_pretrained(str(minilm_dir))(texts), atol=1e-5, rtol=0)
    for i in (0, 5):  # one text a request: no padding, the plain encoder at the text's length
        single = embed(text=tf.constant(texts[i:i + 1]))["embedding"].numpy()
        np.testing.assert_allclose(single, reference[i:i + 1], atol=1e-5, rtol=0)

    # TF Serving's path: variables restored by the saver, the signature run in a session, nothing of ours imported.
    saved = tmp_path / "session.npy"
    result = subprocess.run([sys.executable, "-c", SESSION_EMBED, minilm_export, json.dumps(texts), str(saved)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    np.testing.assert_allclose(np.load(saved), out["embedding"], atol=1e-5, rtol=0)

    check = subprocess.run([sys.executable, str(REPO_ROOT.parent / "shared" / "tools" / "session_loader_check.py"),
                            minilm_export], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]


def test_embed_of_the_jit_compile_export_equals_the_reference(minilm_dir, shared_data, tmp_path_factory):
    """`export.saved_model --jit_compile`: a single text on `embed` runs as one XLA program (the text's length
    rounded up to 16 pieces, cut back before the mean), a batch of unequal lengths on its real tokens; both give
    the reference embeddings."""
    from export.request_length import XLA_SERVING_LENGTH_MULTIPLE
    from export.saved_model import export
    from export.warmup import WARMUP_FILE, read_warmup_file

    version = export(str(minilm_dir), str(tmp_path_factory.mktemp("minilm_jit")), jit_compile=True)
    texts = json.loads((shared_data / "reference" / "minilm_reference_inputs.json").read_text())["sst2_texts"][:8]
    reference = np.load(shared_data / "reference" / "minilm_reference.npz")["sst2_sentence_embedding"][:8]
    embed = tf.saved_model.load(version).signatures["embed"]
    for i in (0, 3):
        np.testing.assert_allclose(embed(text=tf.constant(texts[i:i + 1]))["embedding"].numpy(), reference[i:i + 1],
                                   atol=1e-5, rtol=0)
    np.testing.assert_allclose(embed(text=tf.constant(texts))["embedding"].numpy(), reference, atol=1e-5, rtol=0)
    single = [inputs for signature, inputs in read_warmup_file(f"{version}/assets.extra/{WARMUP_FILE}")
              if signature == "embed" and len(inputs["text"]) == 1]  # (besides the batch of sample texts)
    assert len(single) == 256 // XLA_SERVING_LENGTH_MULTIPLE  # sentence_bert_config.json's max_seq_length: 256
    check = subprocess.run([sys.executable, str(REPO_ROOT.parent / "shared" / "tools" / "session_loader_check.py"),
                            version], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
