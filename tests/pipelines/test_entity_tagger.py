"""EntityTagger: character spans and windows on raw text, and loading a model_dir."""

import json
import logging

import numpy as np
import pytest

from official_bert import BertEncoder
from official_bert.data.tagging_dataset import build_windows, word_pieces, word_predictions
from official_bert.models.token_classifier import BertTokenClassifier
from official_bert.pipelines import EntityTagger
from official_bert.text import BertTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "peter", "black", "##burn", "went", "to", "zurich", "!", "café",
         "the", "of"]


@pytest.fixture
def always_b_per_tagger(tiny_config):
    """A tagger whose head says B-PER for every token (zero kernel, biased): each word is one entity."""
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


def test_a_missing_text_is_named_with_its_index(always_b_per_tagger):
    with pytest.raises(ValueError, match=r"texts\[1\] is None, not a string"):
        always_b_per_tagger(["Peter went.", None])


def test_tagging_logs_sentences_done(always_b_per_tagger, caplog):
    # 4 windows of 6 pieces (the last sentence is two), one a batch; the empty sentence is done from the start
    sentences = [["peter", "went"], ["to"], [], ["peter", "blackburn", "went", "to", "zurich", "!"]]
    always_b_per_tagger.batch_size, always_b_per_tagger.progress_seconds = 1, 0
    with caplog.at_level(logging.INFO, logger="official_bert.pipelines.progress"):
        tags = always_b_per_tagger.tag_words(sentences)
    assert tags == [["B-PER"] * len(words) for words in sentences]
    lines = [record.getMessage() for record in caplog.records if record.name == "official_bert.pipelines.progress"]
    assert [line.split(",")[0] for line in lines] == [f"tagged {done}/4 sentences" for done in (2, 3, 3, 4, 4)]
    assert "sentences/s" in lines[-1]


def test_windows_cut_to_their_length_give_the_full_length_logits(tiny_config):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=5)
    tagger = EntityTagger(model, BertTokenizer(vocab=VOCAB, lower_case=True), list("OABCD"), seq_length=32,
                          batch_size=2)
    words = "peter blackburn went to zurich ! café of the".split()
    sentences = [words[:n] * (1 + n // 3) for n in range(1, 10)] + [[], words * 4]  # cut to 8 to 32 pieces
    windows = build_windows(word_pieces(tagger.tokenizer, sentences), 32, tagger.tokenizer.get_special_tokens_dict())
    full = model.predict(windows.inputs, verbose=0)  # (windows, 32, 5)
    logits = tagger._logits(windows)
    real = windows.inputs["input_mask"] > 0
    np.testing.assert_allclose(logits[real], full[real], atol=1e-5)
    assert tagger.tag_words(sentences) == [[tagger.label_names[i] for i in ids]
                                           for ids in word_predictions(windows, full)]


@pytest.mark.slow
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
    (tmp_path / "task.json").write_text(json.dumps({"task": "ner", "label_names": ["O", "B-PER", "I-PER"], "max_seq_length": 16,
                                                    "do_lower_case": True}))
    tagger = EntityTagger.from_model_dir(str(tmp_path))
    assert tagger.seq_length == 16 and tagger.label_names == ["O", "B-PER", "I-PER"]
    x = {"input_word_ids": np.array([[2, 4, 5, 6, 3]], np.int32), "input_mask": np.ones((1, 5), np.int32),
         "input_type_ids": np.zeros((1, 5), np.int32)}
    np.testing.assert_allclose(tagger.model(x), model(x), atol=1e-6)
    tags = tagger.tag_words([["peter", "went"]])
    assert len(tags[0]) == 2 and set(tags[0]) <= {"O", "B-PER", "I-PER"}
