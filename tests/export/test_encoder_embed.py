"""The encoder export's `embed` signature: raw text -> the Embedder's sentence embedding, in TF Serving's loader too."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from session_loader import tool_checks

pytestmark = pytest.mark.slow
JIT_SEQ_LENGTH = 64  # the --jit_compile export's packed length
# TF Serving's path for `embed`: variables restored by the saver, the signature run in a session.
SESSION_EMBED = """
import numpy as np, tensorflow as tf, tensorflow_text
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    signature = tf.compat.v1.saved_model.loader.load(session, ["serve"], {export!r}).signature_def["embed"]
    texts = np.array({texts!r}, dtype=object)
    out = session.run({{k: v.name for k, v in signature.outputs.items()}}, {{signature.inputs["text"].name: texts}})
np.save({saved!r}, out["embedding"])
"""


def _sst2(shared_data):
    """The first 8 SST-2 texts of the MiniLM reference and their reference sentence embeddings."""
    texts = json.loads((shared_data / "reference" / "minilm_reference_inputs.json").read_text())["sst2_texts"][:8]
    return texts, np.load(shared_data / "reference" / "minilm_reference.npz")["sst2_sentence_embedding"][:8]


@pytest.fixture(scope="module")
def jit_export(minilm_dir, tmp_path_factory):
    from export.saved_model import export

    # At 64 pieces (the texts are shorter), not sentence_bert_config.json's 256 (test_minilm_export.py checks that
    # default): TF Serving compiles one XLA program per 16 pieces at load, 4 here instead of 16 of the 6-layer model.
    return export(str(minilm_dir), str(tmp_path_factory.mktemp("minilm_jit")), jit_compile=True,
                  max_seq_length=JIT_SEQ_LENGTH)


@pytest.fixture(scope="module")
def fresh_process(minilm_export, jit_export, shared_data, tmp_path_factory):
    """One fresh process (nothing of the project imported): `embed` of the plain export in a session, then
    shared/tools/session_loader_check.py on both exports. Returns (session embeddings, checks)."""
    saved = tmp_path_factory.mktemp("session_embed") / "session.npy"
    script = SESSION_EMBED.format(export=minilm_export, texts=_sst2(shared_data)[0], saved=str(saved))
    checks, _ = tool_checks([minilm_export, jit_export], script)
    return np.load(saved), checks


def test_embed_signature_equals_the_reference_and_the_embedder(minilm_export, minilm_saved, minilm_dir,
                                                                fresh_process, shared_data):
    from official_bert.pipelines import Embedder

    texts, reference = _sst2(shared_data)
    embed = minilm_saved.signatures["embed"]
    out = {k: v.numpy() for k, v in embed(text=tf.constant(texts)).items()}
    assert set(out) == {"embedding", "truncated"} and not out["truncated"].any()
    np.testing.assert_allclose(out["embedding"], reference, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["embedding"], Embedder.from_pretrained(str(minilm_dir))(texts), atol=1e-5, rtol=0)
    for i in (0, 5):  # one text a request: no padding, the plain encoder at the text's length
        single = embed(text=tf.constant(texts[i:i + 1]))["embedding"].numpy()
        np.testing.assert_allclose(single, reference[i:i + 1], atol=1e-5, rtol=0)

    # TF Serving's path: variables restored by the saver, the signature run in a session, nothing of ours imported.
    session_embedding, checks = fresh_process
    np.testing.assert_allclose(session_embedding, out["embedding"], atol=1e-5, rtol=0)
    code, printed = checks[minilm_export]
    assert code == 0, printed[-3000:]


def test_embed_of_the_jit_compile_export_equals_the_reference(jit_export, fresh_process, shared_data):
    """`export.saved_model --jit_compile`: a single text on `embed` runs as one XLA program (the text's length
    rounded up to 16 pieces, cut back before the mean), a batch of unequal lengths on its real tokens; both give
    the reference embeddings."""
    from export.request_length import XLA_SERVING_LENGTH_MULTIPLE
    from export.warmup import WARMUP_FILE, read_warmup_file

    version = jit_export
    texts, reference = _sst2(shared_data)
    embed = tf.saved_model.load(version).signatures["embed"]
    for i in (0, 3):
        np.testing.assert_allclose(embed(text=tf.constant(texts[i:i + 1]))["embedding"].numpy(), reference[i:i + 1],
                                   atol=1e-5, rtol=0)
    np.testing.assert_allclose(embed(text=tf.constant(texts))["embedding"].numpy(), reference, atol=1e-5, rtol=0)
    single = [inputs for signature, inputs in read_warmup_file(f"{version}/assets.extra/{WARMUP_FILE}")
              if signature == "embed" and len(inputs["text"]) == 1]  # (besides the batch of sample texts)
    assert len(single) == JIT_SEQ_LENGTH // XLA_SERVING_LENGTH_MULTIPLE
    code, printed = fresh_process[1][version]
    assert code == 0, printed[-3000:]
