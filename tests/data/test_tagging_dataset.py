"""Word-piece label alignment, windowing of long sentences and reassembly of word predictions."""

import numpy as np
import pytest

from official_bert.data.conll import read_conll
from official_bert.data.tagging_dataset import build_windows, tagging_dataset, word_pieces, word_predictions
from official_bert.labels import IGNORE_LABEL
from official_bert.text import BertTokenizer

SPECIAL = {"start_of_sequence_id": 101, "end_of_segment_id": 102, "padding_id": 0}


def _one_hot_logits(windows, num_labels):
    """Logits whose argmax is the window's label at labeled positions (label 0 elsewhere)."""
    labels = np.where(windows.labels == IGNORE_LABEL, 0, windows.labels)
    return np.eye(num_labels, dtype=np.float32)[labels]


def test_windows_keep_whole_words_and_first_piece_labels():
    pieces = [[[5], [6, 7, 8], [9], [10, 11], [12, 20]], [], [[13, 14, 15, 16, 17, 18, 19]]]
    labels = [[1, 2, 0, 3, 1], [], [2]]
    windows = build_windows(pieces, seq_length=6, special_ids=SPECIAL, labels=labels)  # 4 pieces per window
    ids = windows.inputs["input_word_ids"]
    np.testing.assert_array_equal(ids, [[101, 5, 6, 7, 8, 102],
                                        [101, 9, 10, 11, 102, 0],        # [12, 20] would not fit: next window
                                        [101, 12, 20, 102, 0, 0],
                                        [101, 13, 14, 15, 16, 102]])     # an over-long word keeps its start
    np.testing.assert_array_equal(windows.labels, [[-100, 1, 2, -100, -100, -100],
                                                   [-100, 0, 3, -100, -100, -100],
                                                   [-100, 1, -100, -100, -100, -100],
                                                   [-100, 2, -100, -100, -100, -100]])
    np.testing.assert_array_equal(windows.inputs["input_mask"], (ids != 0).astype(np.int32))
    assert not windows.inputs["input_type_ids"].any()
    np.testing.assert_array_equal(windows.sentence, [0, 0, 0, 2])
    np.testing.assert_array_equal(windows.num_words, [5, 0, 1])
    predicted = word_predictions(windows, _one_hot_logits(windows, 4))
    assert [p.tolist() for p in predicted] == labels


def test_alignment_equals_hugging_face_word_ids_on_conll(shared_data):
    """First-piece labels sit where transformers' `word_ids()` puts each word's first token."""
    from tokenizers import Tokenizer

    examples = read_conll(str(shared_data / "conll2003" / "hf-iob2" / "test.txt"))
    words = examples.words[:300]
    ours = BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    pieces = word_pieces(ours, words)
    windows = build_windows(pieces, 512, ours.get_special_tokens_dict())
    assert len(windows) == len(words)  # no sentence this short needs two windows
    reference = Tokenizer.from_file(str(shared_data / "all-MiniLM-L6-v2" / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    for row, sentence in enumerate(words):
        encoding = reference.encode(sentence, is_pretokenized=True)
        n = len(encoding.ids)
        np.testing.assert_array_equal(windows.inputs["input_word_ids"][row, :n], encoding.ids)
        first = [w if w is not None and (i == 0 or encoding.word_ids[i - 1] != w) else -1
                 for i, w in enumerate(encoding.word_ids)]
        np.testing.assert_array_equal(windows.word_index[row, :n], first)


def test_long_conll_sentences_are_windowed_and_put_back(shared_data):
    examples = read_conll(str(shared_data / "conll2003" / "hf-iob2" / "test.txt"))
    long = sorted(examples.words, key=len)[-20:]  # up to 124 words
    tokenizer = BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    pieces = word_pieces(tokenizer, long)
    rng = np.random.default_rng(0)
    labels = [rng.integers(0, 9, len(sentence)).tolist() for sentence in long]
    windows = build_windows(pieces, 32, tokenizer.get_special_tokens_dict(), labels=labels)
    assert len(windows) > 2 * len(long)
    # every word appears exactly once, whole, in order, each window within its length
    for s, sentence in enumerate(pieces):
        rows = np.nonzero(windows.sentence == s)[0]
        ids = windows.inputs["input_word_ids"][rows]
        mask = windows.inputs["input_mask"][rows].astype(bool)
        joined = np.concatenate([row[m][1:-1] for row, m in zip(ids, mask)])
        np.testing.assert_array_equal(joined, np.concatenate([word[:30] for word in sentence]))
        assert sorted(windows.word_index[rows][windows.word_index[rows] >= 0]) == list(range(len(sentence)))
    predicted = word_predictions(windows, _one_hot_logits(windows, 9))
    assert [p.tolist() for p in predicted] == labels


def test_words_without_pieces_become_unk(shared_data):
    tokenizer = BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    pieces = word_pieces(tokenizer, [["Hello", "\u200b", "worlds"]])
    assert pieces == [[[7592], [100], [8484]]]  # 100 = [UNK]; zero-width space has no piece


def test_dataset_batches():
    pieces = [[[5], [6]]] * 5
    windows = build_windows(pieces, 8, SPECIAL, labels=[[1, 0]] * 5)
    features, labels = next(iter(tagging_dataset(windows, 2, is_training=True, seed=1)))
    assert features["input_word_ids"].shape == (2, 8) and labels.shape == (2, 8)
    batches = list(tagging_dataset(windows, 2, is_training=False))
    assert [b["input_word_ids"].shape[0] for b in batches] == [2, 2, 1]
    with pytest.raises(ValueError, match="training needs labeled windows"):
        tagging_dataset(build_windows(pieces, 8, SPECIAL), 2, is_training=True)
