"""Embedder on the real all-MiniLM-L6-v2 against transformers' mean-pooled, L2-normalised reference."""

import json

import numpy as np
import pytest

from tests.conftest import logger_messages

PREPROCESSING = "official_bert.text.preprocessing"


@pytest.fixture(scope="module")
def embedder(minilm_dir):
    from official_bert.pipelines import Embedder

    return Embedder.from_pretrained(str(minilm_dir), batch_size=16)


@pytest.fixture(scope="module")
def reference(shared_data):
    inputs = json.loads((shared_data / "reference" / "minilm_reference_inputs.json").read_text(encoding="utf-8"))
    return inputs, np.load(shared_data / "reference" / "minilm_reference.npz")


@pytest.mark.slow
def test_single_texts_equal_the_reference(embedder, reference):
    inputs, ref = reference
    vectors = embedder(inputs["sst2_texts"])
    assert vectors.shape == ref["sst2_sentence_embedding"].shape and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, ref["sst2_sentence_embedding"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_pairs_equal_the_reference(embedder, reference):
    inputs, ref = reference
    a, b = zip(*inputs["mrpc_pairs"])
    np.testing.assert_allclose(embedder(a, b), ref["mrpc_sentence_embedding"], atol=1e-5, rtol=0)


def test_unnormalised_is_the_masked_mean_of_the_last_layer(embedder, reference):
    from official_bert.pipelines import Embedder

    inputs, ref = reference
    raw = Embedder(embedder.encoder, embedder.tokenizer, seq_length=128, normalize=False)(inputs["sst2_texts"][:4])
    mask = ref["sst2_padding_mask"][:4].astype(np.float32)[..., None]
    expected = (ref["sst2_sequence_output"][:4] * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(raw, expected, atol=1e-5, rtol=0)


def test_top_level_export_and_bad_input(embedder):
    import official_bert

    assert official_bert.Embedder is type(embedder)
    assert embedder([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder("one string")
    with pytest.raises(ValueError, match="text_b"):
        embedder(["a", "b"], ["c"])
    with pytest.raises(ValueError, match=r"texts\[1\] is None, not a string"):
        embedder(["a", None])
    with pytest.raises(ValueError, match=r"text_b\[0\] is None, not a string"):
        embedder(["a"], [None])


def test_texts_cut_at_seq_length_are_counted_in_a_warning(embedder, caplog):
    """sentence-transformers cuts at its max_seq_length (256 here) without a word; the Embedder says how many."""
    import logging

    long_text = "word " * 300  # 300 pieces
    with caplog.at_level(logging.WARNING, logger=PREPROCESSING):
        embedder(["a short text", "another one"])
        assert logger_messages(caplog, PREPROCESSING) == []
        embedder(["a short text", long_text, long_text])
    assert logger_messages(caplog, PREPROCESSING) == [
        "2 of 3 texts (66.7%) do not fit seq_length=256 and are cut, the longest text first"]
