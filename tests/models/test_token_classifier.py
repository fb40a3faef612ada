"""BertTokenClassifier: shapes, loss masking, config round trip, HF BertForTokenClassification parity;
EntityTagger: character spans and windows on raw text."""

import json
import warnings

import keras
import numpy as np
import pytest

from official_bert import BertEncoder
from official_bert.models.entity_tagger import EntityTagger
from official_bert.checkpoints import load_task_weights
from official_bert.models.token_classifier import BertTokenClassifier, token_classification_loss


def _inputs(batch, seq, pad_from=None, vocab=100, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    if pad_from is not None:
        mask[:, pad_from:] = 0
    return {"input_word_ids": rng.integers(1, vocab, (batch, seq)).astype(np.int32) * mask,
            "input_mask": mask, "input_type_ids": np.zeros((batch, seq), np.int32)}


def test_logits_per_token_in_float32_even_under_mixed_precision(tiny_config):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
    logits = model(_inputs(2, 7))
    assert tuple(logits.shape) == (2, 7, 9) and logits.dtype == "float32"
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        mixed = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
        assert mixed(_inputs(2, 7)).dtype == "float32"
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert model.dropout_rate == tiny_config.hidden_dropout_prob


def test_loss_ignores_positions_labeled_minus_100():
    logits = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    labels = np.array([[1, -100, 2], [0, -100, -100]])
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -(log_probs[0, 0, 1] + log_probs[0, 2, 2] + log_probs[1, 0, 0]) / 3
    assert float(token_classification_loss()(labels, logits)) == pytest.approx(expected, rel=1e-5)


def test_pooler_is_frozen_so_training_warns_of_no_missing_gradients(tiny_config):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=3)
    pooler = {id(w) for w in model.encoder.pooler.weights}
    assert not pooler & {id(w) for w in model.trainable_weights}
    assert pooler <= {id(w) for w in model.weights}  # still saved
    model.compile(optimizer="adam", loss=token_classification_loss())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(_inputs(2, 7), np.ones((2, 7), np.int32), epochs=1, verbose=0)


def test_get_config_and_keras_file_round_trip(tiny_config, tmp_path):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=5, dropout_rate=0.2)
    clone = BertTokenClassifier.from_config(model.get_config())
    assert clone.num_labels == 5 and clone.dropout_rate == 0.2
    model.save(tmp_path / "tagger.keras")
    restored = keras.models.load_model(tmp_path / "tagger.keras")
    x = _inputs(2, 6, pad_from=4)
    np.testing.assert_allclose(model(x), restored(x), atol=1e-6)


def test_head_specs_in_both_formats(tiny_config):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
    kernel, bias = model.head_specs()
    assert (kernel.hf_name, kernel.stored_shape("hf")) == ("classifier.weight", (9, 32))
    assert (kernel.google_name, kernel.stored_shape("google")) == ("output_weights", (9, 32))
    assert (bias.hf_name, bias.google_name, bias.stored_shape("hf")) == ("classifier.bias", "output_bias", (9,))


def test_loads_hugging_face_bert_for_token_classification_and_matches_its_logits(tiny_config, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf_config = transformers.BertConfig(**{**tiny_config.to_hf_dict(), "num_labels": 9})
    torch.manual_seed(0)
    reference = transformers.BertForTokenClassification(hf_config).eval()
    reference.save_pretrained(tmp_path, safe_serialization=True)
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
    # HF's token classifier has no pooler; ours keeps its own.
    assert load_task_weights(model.encoder, model.head_specs(), str(tmp_path), optional_pooler=True)
    x = _inputs(2, 8, pad_from=6)
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
                             attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                             token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(x))[:, :6], expected[:, :6], atol=1e-5)


def test_loads_an_encoder_checkpoint_with_a_fresh_head(tiny_config, tmp_path):
    from official_bert.checkpoints import save_encoder

    source = BertEncoder(tiny_config)
    save_encoder(source, tmp_path)
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=4)
    assert not load_task_weights(model.encoder, model.head_specs(), str(tmp_path), optional_pooler=True)
    np.testing.assert_array_equal(model.encoder.pooler.kernel.numpy(), source.pooler.kernel.numpy())


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "peter", "black", "##burn", "went", "to", "zurich", "!", "café",
         "the", "of"]


@pytest.fixture
def always_b_per_tagger(tiny_config):
    """A tagger whose head says B-PER for every token (zero kernel, biased): each word is one entity."""
    from official_bert.text import BertTokenizer

    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=3)
    model.head.kernel.assign(np.zeros(model.head.kernel.shape, np.float32))
    model.head.bias.assign(np.array([0.0, 5.0, 0.0], np.float32))
    return EntityTagger(model, BertTokenizer(vocab=VOCAB, lower_case=True), ["O", "B-PER", "I-PER"], seq_length=6)


def test_entities_carry_character_spans_of_the_input(always_b_per_tagger):
    texts = ["Peter  Blackburn went to Zürich!", "", "Café   of the  café"]
    entities = always_b_per_tagger(texts)
    assert [[e["text"] for e in row] for row in entities] == [
        ["Peter", "Blackburn", "went", "to", "Zürich", "!"], [], ["Café", "of", "the", "café"]]
    for text, row in zip(texts, entities):
        for e in row:
            assert text[e["start"]:e["end"]] == e["text"] and e["type"] == "PER"
    # 6 words with seq_length 6 (4 pieces per window) need several windows; nothing is lost
    assert always_b_per_tagger.tag_words([["peter", "blackburn", "went", "to", "zurich", "!"]]) == [["B-PER"] * 6]


def test_entity_spans_equal_hugging_face_word_offsets_around_deleted_characters(always_b_per_tagger):
    # Zero-width space, BOM, direction mark, soft hyphen and (uncased) accents that the normalizer deletes
    # belong to no entity unless inside it, as in Hugging Face `tokenizers`' offsets.
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {token: i for i, token in enumerate(VOCAB)}
    reference = tokenizers.Tokenizer(tokenizers.models.WordPiece(vocab, unk_token="[UNK]"))
    reference.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    reference.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    texts = ["Peter\u200b Black\u200bburn\ufeff went to Zu\u0308rich\u200e!",
             "\u200bcafe\u0301\u200b of the\u00ad caf\u00e9\u0301"]
    for text, row in zip(texts, always_b_per_tagger(texts)):
        encoding = reference.encode(text, add_special_tokens=False)
        words = {}  # word index -> (start, end) over its pieces
        for word, (start, end) in zip(encoding.word_ids, encoding.offsets):
            words[word] = (words.get(word, (start, end))[0], end)
        assert [(e["start"], e["end"]) for e in row] == [words[w] for w in sorted(words)]


def test_from_model_dir(tiny_config, tmp_path):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=3)
    model.save_weights(tmp_path / "model.weights.h5")
    (tmp_path / "bert_config.json").write_text(json.dumps(tiny_config.to_dict()))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB + [f"x{i}" for i in range(100 - len(VOCAB))]) + "\n")
    (tmp_path / "task.json").write_text(json.dumps({"label_names": ["O", "B-PER", "I-PER"], "max_seq_length": 16,
                                                    "do_lower_case": True}))
    tagger = EntityTagger.from_model_dir(str(tmp_path))
    assert tagger.seq_length == 16 and tagger.label_names == ["O", "B-PER", "I-PER"]
    x = _inputs(1, 5, vocab=len(VOCAB))
    np.testing.assert_allclose(tagger.model(x), model(x), atol=1e-6)
    tags = tagger.tag_words([["peter", "went"]])
    assert len(tags[0]) == 2 and set(tags[0]) <= {"O", "B-PER", "I-PER"}
