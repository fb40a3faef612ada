"""Bad input to the exported signatures: empty strings and batches, over-long text, invalid UTF-8, bad tf.Examples."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

pytestmark = pytest.mark.slow  # every test reads exports that the module's fixture builds (seconds each)


@pytest.fixture(scope="module")
def models(exports):
    return {kind: tf.saved_model.load(path) for kind, path in exports.items()}


def _call(model, signature="serving_default", **inputs):
    outputs = model.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})
    return {k: v.numpy() for k, v in outputs.items()}


def test_empty_batches_give_empty_outputs(models):
    empty = np.array([], dtype=object)
    out = _call(models["classifier"], text=empty, text_b=empty)
    assert out["logits"].shape == (0, 2) and out["label"].shape == (0,) and out["truncated"].shape == (0,)
    assert _call(models["classifier"], "serve_examples", examples=empty)["logits"].shape == (0, 2)
    out = _call(models["tagger"], text=empty)
    assert out["entity_type"].shape == (0, 0) and out["word_labels"].shape == (0, 0)
    assert out["num_entities"].shape == (0,) and out["logits"].shape == (0, 48, 9)
    out = _call(models["tagger"], "serve_tokens", **{k: np.zeros((0, 48), np.int32)
                                                      for k in ("input_word_ids", "input_mask", "input_type_ids")})
    assert out["token_labels"].shape == (0, 48)


def test_empty_strings_are_answered(models):
    out = _call(models["classifier"], text=np.array(["", "A man is here."], object), text_b=np.array(["", ""], object))
    assert np.isfinite(out["logits"]).all() and not out["truncated"].any()
    out = _call(models["tagger"], text=np.array(["", "Peter flew to Brussels."], object))
    assert out["num_words"].tolist() == [0, 5] and out["num_entities"][0] == 0
    assert (out["entity_type"][0] == b"").all() and (out["entity_start"][0] == -1).all()  # padding


@pytest.mark.parametrize("texts", [[""], [" "], ["\u200b"], ["", "  "]], ids=["empty", "space", "zero-width", "two"])
def test_a_request_without_any_word_is_answered_with_none(models, texts):
    out = _call(models["tagger"], text=np.array(texts, object))
    assert out["num_words"].tolist() == [0] * len(texts) and out["num_entities"].tolist() == [0] * len(texts)
    assert out["word_labels"].shape == (len(texts), 0) and out["entity_text"].shape == (len(texts), 0)
    assert out["logits"].shape == (len(texts), 48, 9) and not out["logits"].any() and not out["truncated"].any()


def test_long_text_is_truncated_and_says_so_or_read_in_windows(models):
    long_text = " ".join(["Brussels"] * 500)
    out = _call(models["classifier"], text=np.array([long_text, "short"], object),
                text_b=np.array(["short", long_text], object))
    assert out["truncated"].tolist() == [True, True]
    out = _call(models["tagger"], text=np.array([long_text, "Brussels", "xq" * 49], object))  # 98 pieces
    # the tagger reads a long text in windows of whole words (46 pieces between [CLS] and [SEP]): every word tagged;
    # only a word longer than a window is cut, to its first 46 pieces
    assert out["truncated"].tolist() == [False, False, True]
    assert out["num_words"].tolist() == [500, 1, 1]
    assert out["word_end"][0, 499] == len(long_text) and out["word_end"][2, 0] == 98  # (its span: the whole word)


def test_invalid_utf8_becomes_unknown_words_with_exact_byte_offsets(models, vocab_file):
    text = b"Peter \xff\xfe flew to Br\xc3"  # two stray bytes and a cut-off two-byte character
    out = _call(models["tagger"], text=np.array([text], object))
    assert out["num_words"][0] == 5
    np.testing.assert_array_equal(out["word_byte_start"][0], [0, 6, 9, 14, 17])
    np.testing.assert_array_equal(out["word_byte_end"][0], [5, 8, 13, 16, 20])
    # Characters count UTF-8 lead bytes: each invalid byte counts as one, as Python's errors="replace" does here.
    decoded = text.decode("utf-8", errors="replace")
    assert out["word_start"][0].tolist() == [0, 6, 9, 14, 17] and decoded[17:20] == "Br\ufffd"
    # The invalid runs are [UNK] pieces: the same logits as the token form of "[CLS] peter [UNK] flew to [UNK] [SEP]".
    # ("br" + the cut byte is one word the vocab cannot spell, so it is [UNK] as a whole.)
    vocab = open(vocab_file, encoding="utf-8").read().splitlines()
    ids = [vocab.index(t) for t in ("[CLS]", "peter", "[UNK]", "flew", "to", "[UNK]", "[SEP]")]
    tokens = {"input_word_ids": np.array([ids + [0] * (48 - len(ids))], np.int32),
              "input_mask": np.array([[1] * len(ids) + [0] * (48 - len(ids))], np.int32),
              "input_type_ids": np.zeros((1, 48), np.int32)}
    real = len(ids)  # the raw-text signature runs at the text's own length: zeros after it
    np.testing.assert_allclose(out["logits"][:, :real], _call(models["tagger"], "serve_tokens", **tokens)["logits"][
        :, :real], atol=1e-5, rtol=1e-5)
    assert not np.asarray(out["logits"])[:, real:].any()


def test_examples_without_the_feature_are_an_error_naming_it(models):
    example = tf.train.Example(features=tf.train.Features(feature={
        "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"only one text"]))})).SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError, match="text_b"):
        _call(models["classifier"], "serve_examples", examples=np.array([example], object))
