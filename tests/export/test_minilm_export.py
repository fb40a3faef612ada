"""The real-size encoder-only export: all-MiniLM-L6-v2 from its Hugging Face directory. `serving_default` and
the `embed` signature (raw text -> the Embedder's sentence embedding) against HF's reference outputs, only
serving-safe ops, the `--jit_compile` export, and TF Serving's session loader on both (one module: its tests
share the export, which costs a worker about 30 s)."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from export.ops import disallowed_ops, signature_ops
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


@pytest.fixture(scope="module")
def minilm_export(minilm_dir, tmp_path_factory):
    """`export.saved_model.export` of the real all-MiniLM-L6-v2 directory, with its defaults: the version directory."""
    from export.saved_model import export

    return export(str(minilm_dir), str(tmp_path_factory.mktemp("minilm")))


@pytest.fixture(scope="module")
def minilm_saved(minilm_export):
    """`minilm_export` loaded with `tf.saved_model.load` (tests only call its signatures)."""
    import tensorflow as tf

    return tf.saved_model.load(minilm_export)


@pytest.fixture(scope="module")
def reference(shared_data):
    inputs = json.loads((shared_data / "reference" / "minilm_reference_inputs.json").read_text(encoding="utf-8"))
    return inputs["sst2_texts"], np.load(shared_data / "reference" / "minilm_reference.npz")


def test_minilm_export_equals_our_encoder_and_the_reference(minilm_saved, minilm_dir, reference):
    from official_bert.checkpoints import load_encoder

    texts, ref = reference
    texts, ref = texts[:16], {k: ref[k][:16] for k in ref.files if k.startswith("sst2_")}
    out = {k: v.numpy() for k, v in minilm_saved.signatures["serving_default"](text=tf.constant(texts)).items()}
    length = ref["sst2_input_ids"].shape[1]  # the reference is padded to its longest text
    mask = ref["sst2_padding_mask"]
    assert out["sequence_output"].shape == (len(texts), 256, 384)  # sentence_bert_config.json's max_seq_length
    np.testing.assert_array_equal(out["input_mask"][:, :length], mask)
    assert out["input_mask"][:, length:].sum() == 0 and not out["truncated"].any()

    # Hugging Face transformers (torch) on the same texts: sentence-transformers' mean pooling + L2 norm.
    np.testing.assert_allclose(out["normalized_embedding"], ref["sst2_sentence_embedding"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["pooled_output"], ref["sst2_pooled_output"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["sequence_output"][:, :length] * mask[..., None],
                               ref["sst2_sequence_output"] * mask[..., None], atol=1e-5, rtol=0)

    # Our Keras encoder in Python on the reference's token ids, padded to 256.
    encoder, _ = load_encoder(str(minilm_dir))
    pad = np.zeros((len(texts), 256 - length), np.int32)
    tokens = {"input_word_ids": np.concatenate([ref["sst2_input_ids"], pad], 1).astype(np.int32),
              "input_mask": np.concatenate([mask, pad], 1).astype(np.int32),
              "input_type_ids": np.concatenate([ref["sst2_segment_ids"], pad], 1).astype(np.int32)}
    ours = encoder(tokens, training=False)
    real = tokens["input_mask"][..., None]  # padding rows of sequence_output carry no meaning
    np.testing.assert_allclose(out["sequence_output"] * real, ours["sequence_output"].numpy() * real, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["pooled_output"], ours["pooled_output"].numpy(), atol=1e-5, rtol=0)
    expected_mean = (ours["sequence_output"].numpy() * real).sum(1) / mask.sum(1)[:, None]
    np.testing.assert_allclose(out["mean_pooled_output"], expected_mean, atol=1e-5, rtol=0)
    served = minilm_saved.signatures["serve_tokens"](**{k: tf.constant(v) for k, v in tokens.items()})
    np.testing.assert_allclose(served["mean_pooled_output"].numpy(), out["mean_pooled_output"], atol=1e-5, rtol=0)


def test_minilm_export_uses_only_serving_safe_ops(minilm_export):
    for name, ops in signature_ops(minilm_export).items():
        assert disallowed_ops(ops) == set(), name


def _sst2(reference):
    """The first 8 SST-2 texts of the `reference` fixture and their reference sentence embeddings."""
    texts, outputs = reference
    return texts[:8], outputs["sst2_sentence_embedding"][:8]


@pytest.fixture(scope="module")
def jit_export(minilm_dir, tmp_path_factory):
    from export.saved_model import export

    # At 64 pieces (the texts are shorter), not sentence_bert_config.json's 256 (the tests above check that
    # default): TF Serving compiles one XLA program per 16 pieces at load, 4 here instead of 16 of the 6-layer model.
    return export(str(minilm_dir), str(tmp_path_factory.mktemp("minilm_jit")), jit_compile=True,
                  max_seq_length=JIT_SEQ_LENGTH)


@pytest.fixture(scope="module")
def fresh_process(minilm_export, jit_export, reference, tmp_path_factory):
    """One fresh process (nothing of the project imported): `embed` of the plain export in a session, then
    shared/tools/session_loader_check.py on both exports. Returns (session embeddings, checks)."""
    saved = tmp_path_factory.mktemp("session_embed") / "session.npy"
    script = SESSION_EMBED.format(export=minilm_export, texts=_sst2(reference)[0], saved=str(saved))
    checks, _ = tool_checks([minilm_export, jit_export], script)
    return np.load(saved), checks


def test_embed_signature_equals_the_reference_and_the_embedder(minilm_export, minilm_saved, minilm_dir,
                                                                fresh_process, reference):
    from official_bert.pipelines import Embedder

    texts, expected = _sst2(reference)
    embed = minilm_saved.signatures["embed"]
    out = {k: v.numpy() for k, v in embed(text=tf.constant(texts)).items()}
    assert set(out) == {"embedding", "truncated"} and not out["truncated"].any()
    np.testing.assert_allclose(out["embedding"], expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["embedding"], Embedder.from_pretrained(str(minilm_dir))(texts), atol=1e-5, rtol=0)
    for i in (0, 5):  # one text a request: no padding, the plain encoder at the text's length
        single = embed(text=tf.constant(texts[i:i + 1]))["embedding"].numpy()
        np.testing.assert_allclose(single, expected[i:i + 1], atol=1e-5, rtol=0)

    # TF Serving's path: variables restored by the saver, the signature run in a session, nothing of ours imported.
    session_embedding, checks = fresh_process
    np.testing.assert_allclose(session_embedding, out["embedding"], atol=1e-5, rtol=0)
    code, printed = checks[minilm_export]
    assert code == 0, printed[-3000:]


def test_embed_of_the_jit_compile_export_equals_the_reference(jit_export, fresh_process, reference):
    """`export.saved_model --jit_compile`: a single text on `embed` runs as one XLA program (the text's length
    rounded up to 16 pieces, cut back before the mean), a batch of unequal lengths on its real tokens; both give
    the reference embeddings."""
    from export.request_length import XLA_SERVING_LENGTH_MULTIPLE
    from export.warmup import WARMUP_FILE, read_warmup_file

    version = jit_export
    texts, expected = _sst2(reference)
    embed = tf.saved_model.load(version).signatures["embed"]
    for i in (0, 3):
        np.testing.assert_allclose(embed(text=tf.constant(texts[i:i + 1]))["embedding"].numpy(), expected[i:i + 1],
                                   atol=1e-5, rtol=0)
    np.testing.assert_allclose(embed(text=tf.constant(texts))["embedding"].numpy(), expected, atol=1e-5, rtol=0)
    single = [inputs for signature, inputs in read_warmup_file(f"{version}/assets.extra/{WARMUP_FILE}")
              if signature == "embed" and len(inputs["text"]) == 1]  # (besides the batch of sample texts)
    assert len(single) == JIT_SEQ_LENGTH // XLA_SERVING_LENGTH_MULTIPLE
    code, printed = fresh_process[1][version]
    assert code == 0, printed[-3000:]
