"""SQuAD doc-stride features: word pieces and offsets equal to Hugging Face's
BertTokenizerFast on the whole real dev set, windows and max-context flags as Google's run_squad.py."""

import logging

import numpy as np
import pytest

from hf_references import run_qa_positions
from official_bert.data.squad import build_features, doc_spans, squad_dataset
from official_bert.data.squad_examples import SquadExample, read_squad_json
from official_bert.text import BertTokenizer

SEQ, STRIDE, QUERY = 384, 128, 64


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    return BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))


@pytest.fixture(scope="module")
def dev_v1(shared_data):
    return read_squad_json(str(shared_data / "squad" / "v1.1" / "dev-v1.1.json"))


@pytest.fixture(scope="module")
def dev_features(dev_v1, tokenizer):
    return build_features(dev_v1, tokenizer, SEQ, STRIDE, QUERY, is_training=True)


@pytest.fixture(scope="module")
def hf_tokenizer(minilm_dir):
    transformers = pytest.importorskip("transformers")
    return transformers.BertTokenizerFast.from_pretrained(str(minilm_dir))


# --- features against Hugging Face -------------------------------------------------------------------------


def _context_part(features, row):
    """Our window's context pieces: (positions, ids, char spans)."""
    positions = np.nonzero(features.token_char_spans[row, :, 0] >= 0)[0]
    return positions, features.inputs["input_word_ids"][row, positions], features.token_char_spans[row, positions]


def _rows_by_example(features):
    rows = {}
    for row, i in enumerate(features.example_index):
        rows.setdefault(int(i), []).append(row)
    return rows


@pytest.mark.slow
def test_pieces_and_offsets_equal_hf_tokenizer_fast_on_the_whole_dev_set(dev_v1, dev_features, hf_tokenizer):
    """HF with `stride=128` (an overlap) cuts other windows than the original's doc_stride (a step); each
    example's context pieces, put back together from the windows of each, must be the same pieces with the
    same character offsets, its question the same pieces, and each of our windows must start `doc_stride`
    pieces after the one before."""
    features, stats = dev_features
    assert stats["windows"] == len(features) > len(dev_v1) and stats["truncated_questions"] == 0
    encoding = hf_tokenizer([e.question for e in dev_v1], [e.context for e in dev_v1], truncation="only_second",
                            max_length=SEQ, stride=STRIDE, return_overflowing_tokens=True,
                            return_offsets_mapping=True)
    hf_windows = {}
    for w, sample in enumerate(encoding["overflow_to_sample_mapping"]):
        hf_windows.setdefault(sample, []).append(w)
    ours = _rows_by_example(features)
    assert sorted(ours) == sorted(hf_windows) == list(range(len(dev_v1)))
    multi_window = 0
    for i in range(len(dev_v1)):
        # Hugging Face: consecutive windows overlap by `stride` context pieces.
        hf_ids, hf_offsets = [], []
        for k, w in enumerate(hf_windows[i]):
            sequence_ids = encoding.sequence_ids(w)
            context = [j for j, s in enumerate(sequence_ids) if s == 1]
            ids = [encoding["input_ids"][w][j] for j in context]
            offsets = [tuple(encoding["offset_mapping"][w][j]) for j in context]
            if k == 0:
                hf_question = [encoding["input_ids"][w][j] for j, s in enumerate(sequence_ids) if s == 0]
                hf_ids, hf_offsets = ids, offsets
            else:
                assert offsets[:STRIDE] == hf_offsets[-STRIDE:]
                hf_ids, hf_offsets = hf_ids + ids[STRIDE:], hf_offsets + offsets[STRIDE:]
        # Ours: each window starts doc_stride pieces after the previous one.
        our_ids, our_offsets, start = [], [], 0
        for k, row in enumerate(ours[i]):
            positions, ids, spans = _context_part(features, row)
            offsets = [tuple(s) for s in spans.tolist()]
            if k > 0:
                start += STRIDE
                assert offsets[:len(our_offsets) - start] == our_offsets[start:]
            our_ids[start:], our_offsets[start:] = ids.tolist(), offsets
            assert features.inputs["input_word_ids"][row, 1:positions[0] - 1].tolist() == hf_question
        multi_window += len(ours[i]) > 1
        assert (our_ids, our_offsets) == (hf_ids, hf_offsets), dev_v1[i].qas_id
    assert multi_window > 150


def _hf_aligned(hf_tokenizer, example, question_length):
    """HF windows cut where the original's are: an overlap of (pieces per window - doc_stride)."""
    per_window = SEQ - question_length - 3
    return hf_tokenizer(example.question, example.context, truncation="only_second", max_length=SEQ,
                        stride=per_window - STRIDE, return_overflowing_tokens=True, return_offsets_mapping=True)


def _original_is_max_context(spans, span_index, position):
    """Google run_squad.py's `_check_is_max_context`, transcribed."""
    best_score, best_span_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, index
    return span_index == best_span_index


def test_windows_targets_and_max_context_equal_the_references_where_the_recipes_agree(dev_v1, dev_features,
                                                                                      hf_tokenizer):
    """On every multi-window dev example, HF called with the overlap that makes its windows the original's:
    each window identical (ids, type ids, mask, offsets); training targets equal HF run_qa's except where the
    answer text starts or ends with whitespace (HF then points at the piece before the answer); max-context
    flags equal the original's rule."""
    features, _ = dev_features
    rows = _rows_by_example(features)
    checked, whitespace_answers = 0, 0
    for i, example_rows in rows.items():
        if len(example_rows) == 1 and i % 10:
            continue  # every multi-window example and a tenth of the others
        example = dev_v1[i]
        first = example_rows[0]
        question_length = int(np.argmax(features.inputs["input_type_ids"][first])) - 2
        encoding = _hf_aligned(hf_tokenizer, example, question_length)
        assert len(encoding["input_ids"]) == len(example_rows), example.qas_id
        spans = []
        for w, row in enumerate(example_rows):
            length = int(features.inputs["input_mask"][row].sum())
            for ours, theirs in (("input_word_ids", "input_ids"), ("input_type_ids", "token_type_ids"),
                                 ("input_mask", "attention_mask")):
                assert features.inputs[ours][row, :length].tolist() == encoding[theirs][w], (example.qas_id, ours)
            assert not features.inputs["input_mask"][row, length:].any()
            sequence_ids = encoding.sequence_ids(w)
            context = [j for j, s in enumerate(sequence_ids) if s == 1]
            expected_spans = [list(encoding["offset_mapping"][w][j]) if s == 1 else [-1, -1]
                              for j, s in enumerate(sequence_ids)]
            assert features.token_char_spans[row, :length].tolist() == expected_spans
            assert (features.token_char_spans[row, length:] == -1).all()
            start = 0 if w == 0 else spans[-1][0] + STRIDE
            spans.append((start, len(context)))
            answer = example.answers[0]
            expected = run_qa_positions(encoding, w, answer)
            actual = (int(features.start_positions[row]), int(features.end_positions[row]))
            if answer["text"] != answer["text"].strip() and actual != (0, 0):
                # ours: the pieces overlapping the answer; HF's start can be the piece before its leading space
                whitespace_answers += 1
                begin = answer["answer_start"] + len(answer["text"]) - len(answer["text"].lstrip())
                end = answer["answer_start"] + len(answer["text"].rstrip())
                spans_at = features.token_char_spans[row, list(actual)]
                assert spans_at[0, 0] <= begin < spans_at[0, 1] and spans_at[1, 0] < end <= spans_at[1, 1]
            else:
                assert actual == expected, example.qas_id
            checked += 1
        for w, row in enumerate(example_rows):
            context = np.nonzero(features.token_char_spans[row, :, 0] >= 0)[0]
            expected = [_original_is_max_context(spans, w, spans[w][0] + j) for j in range(len(context))]
            assert features.token_is_max_context[row, context].tolist() == expected
            assert not np.delete(features.token_is_max_context[row], context).any()
    assert checked > 1400 and whitespace_answers < 10


# --- features: layout, targets, stats ----------------------------------------------------------------------


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "who", "what", "?", ".", "a",
         "dog", "ran", "caf", "##e", "where", "did"]


@pytest.fixture
def tiny_tokenizer():
    return BertTokenizer(vocab=VOCAB, lower_case=True)


@pytest.mark.slow
def test_window_layout_type_ids_spans_and_question_truncation(tiny_tokenizer):
    context = "The  cat sat on the mat. The dog ran."  # 11 pieces
    example = SquadExample("q", "Who sat on the mat ?", context, [{"text": "dog", "answer_start": 29}])
    features, stats = build_features([example], tiny_tokenizer, max_seq_length=12, doc_stride=3,
                                     max_query_length=3, is_training=True)
    # question: 6 pieces cut to 3; 12 - 3 - 3 = 6 context pieces per window: pieces 0-5, 3-8, 6-10
    assert stats["truncated_questions"] == 1 and stats["windows"] == len(features) == 3
    ids = features.inputs["input_word_ids"]
    assert ids[0].tolist() == [2, 9, 6, 7, 3, 4, 5, 6, 7, 4, 8, 3]
    assert ids[2].tolist() == [2, 9, 6, 7, 3, 12, 4, 14, 15, 12, 3, 0]
    assert features.inputs["input_type_ids"][2].tolist() == [0] * 5 + [1] * 6 + [0]
    assert features.inputs["input_mask"][2].tolist() == [1] * 11 + [0]
    assert features.token_char_spans[0, :, 0].tolist() == [-1] * 5 + [0, 5, 9, 13, 16, 20] + [-1]
    assert features.token_char_spans[0, :, 1].tolist() == [-1] * 5 + [3, 8, 12, 15, 19, 23] + [-1]
    # "dog" is context piece 8: outside window 0 ([CLS] target), at 8 - 3 + 5 = 10 and 8 - 6 + 5 = 7
    assert features.start_positions.tolist() == features.end_positions.tolist() == [0, 10, 7]
    assert stats["answer_outside_window"] == 1
    # window 1 (pieces 3-8): piece 4 ties with window 0 (min(4, 1) = min(1, 4)), which wins; piece 7 has
    # min(4, 1) + .06 here and min(1, 3) + .05 in window 2; piece 8 min(5, 0) + .06 here, min(2, 2) + .05 there
    assert features.token_is_max_context[1].tolist() == [False] * 5 + [False, False, True, True, True, False, False]
    assert features.example_index.tolist() == [0, 0, 0]


def test_answer_span_maps_to_pieces_overlapping_it_with_non_ascii_offsets(tiny_tokenizer):
    context = "Café cat sat."  # é is two bytes: offsets must be characters
    examples = [SquadExample("a", "what ?", context, [{"text": "cat sat", "answer_start": 5}]),
                SquadExample("b", "what ?", context, [{"text": "afé", "answer_start": 1}])]  # inside a word
    features, _ = build_features(examples, tiny_tokenizer, max_seq_length=16, max_query_length=4, is_training=True)
    spans = features.token_char_spans
    assert spans[0, 4:9].tolist() == [[0, 3], [3, 4], [5, 8], [9, 12], [12, 13]]  # caf ##e cat sat .
    assert (features.start_positions.tolist(), features.end_positions.tolist()) == ([6, 4], [7, 5])


def test_mismatched_answers_are_counted_logged_and_skipped_in_training(tiny_tokenizer, caplog):
    context = "The cat sat on the mat."
    examples = [SquadExample("good", "who sat ?", context, [{"text": "cat", "answer_start": 4}]),
                SquadExample("shifted", "who sat ?", context, [{"text": "cat", "answer_start": 5}]),
                SquadExample("second_bad", "who sat ?", context, [{"text": "cat", "answer_start": 4},
                                                                  {"text": "dog", "answer_start": 4}]),
                SquadExample("outside", "who sat ?", context, [{"text": "cat", "answer_start": 90}]),
                SquadExample("no_piece", "who sat ?", context + " ", [{"text": " ", "answer_start": 23}]),
                SquadExample("none", "who ?", context, [], is_impossible=True)]
    with caplog.at_level(logging.WARNING, logger="official_bert.data.squad"):
        train, stats = build_features(examples, tiny_tokenizer, max_seq_length=32, max_query_length=8,
                                      is_training=True)
    assert stats["mismatched_answers"] == 3 and stats["mismatched_qas_ids"] == ["shifted", "second_bad", "outside"]
    assert stats["answers_without_pieces"] == 1 and stats["skipped_examples"] == 3
    assert stats["impossible_examples"] == 1
    assert "qas_id shifted: answer 'cat' does not match the context at answer_start=5 ('at ')" in caplog.text
    assert "qas_id no_piece" in caplog.text
    # training keeps good, second_bad (its first answer is fine) and the impossible one, which points at [CLS];
    # "cat" is at 6 in [CLS] who sat ? [SEP] the cat
    assert train.example_index.tolist() == [0, 2, 5]
    assert train.start_positions.tolist() == [6, 6, 0] and train.end_positions.tolist() == [6, 6, 0]
    predict, stats = build_features(examples, tiny_tokenizer, max_seq_length=32, max_query_length=8)
    assert predict.example_index.tolist() == list(range(6)) and predict.start_positions is None
    assert stats["skipped_examples"] == 0 and stats["mismatched_answers"] == 3


def test_training_question_without_answer_is_an_error_and_empty_context_gets_a_window(tiny_tokenizer):
    with pytest.raises(ValueError, match="qas_id x: a training question needs an answer"):
        build_features([SquadExample("x", "who ?", "the cat", [])], tiny_tokenizer, 16, max_query_length=8,
                       is_training=True)
    features, _ = build_features([SquadExample("e", "who ?", "", [])], tiny_tokenizer, 16, max_query_length=8)
    assert features.inputs["input_word_ids"][0, :5].tolist() == [2, 9, 11, 3, 3]
    assert (features.token_char_spans == -1).all()
    with pytest.raises(ValueError, match="max_seq_length=67 leaves no room"):
        build_features([], tiny_tokenizer, max_seq_length=67, max_query_length=64)


def test_doc_spans_step_by_doc_stride_and_cover_everything():
    assert doc_spans(10, 6, 3) == [(0, 6), (3, 6), (6, 4)]
    assert doc_spans(10, 4, 8) == [(0, 4), (4, 4), (8, 2)]  # a stride longer than a window never skips pieces
    assert doc_spans(0, 4, 2) == [(0, 0)]


def test_squad_dataset_batches(tiny_tokenizer):
    examples = [SquadExample(str(i), "who ?", "the cat sat on the mat", [{"text": "cat", "answer_start": 4}])
                for i in range(5)]
    features, _ = build_features(examples, tiny_tokenizer, max_seq_length=8, doc_stride=2, max_query_length=2,
                                 is_training=True)
    inputs, labels = next(iter(squad_dataset(features, 4, is_training=True, seed=1)))
    assert sorted(labels) == ["end_logits", "start_logits"] and tuple(inputs["input_word_ids"].shape) == (4, 8)
    batches = list(squad_dataset(features, 4, is_training=False))
    assert sum(len(b["input_mask"]) for b in batches) == len(features) and not isinstance(batches[0], tuple)
    predict, _ = build_features(examples, tiny_tokenizer, max_seq_length=8, max_query_length=2)
    with pytest.raises(ValueError, match="is_training=True"):
        squad_dataset(predict, 4, is_training=True)
