"""Real-size encoder-only export: all-MiniLM-L6-v2 from its Hugging Face directory, against HF's reference outputs."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from export.ops import disallowed_ops, signature_ops

pytestmark = pytest.mark.slow


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
