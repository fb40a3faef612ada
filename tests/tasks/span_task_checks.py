"""What the family span-task tests (RoBERTa, ALBERT) share: CoNLL and SQuAD samples, and the comparisons of our
tagging windows and SQuAD windows with a transformers fast tokenizer's (`is_split_into_words`; run_qa.py's
overflowing windows, offsets and targets)."""

import json

import numpy as np

from hf_references import run_qa_positions
from official_bert.data.squad_examples import SquadExample, read_squad_json
from official_bert.data.tagging_dataset import build_windows
from official_bert.labels import IGNORE_LABEL


def conll_sentences(path, count):
    """The first `count` sentences of a CoNLL file, as a CoNLL file's text."""
    blocks = [b for b in path.read_text().split("\n\n") if b.strip() and not b.startswith("-DOCSTART-")]
    return "\n\n".join(blocks[:count]) + "\n"


def squad_sample(shared_data, reference, max_query, count=20):
    """`count` SQuAD v1.1 dev questions (every 50th) of at most `max_query` pieces, with a leading space added to
    every third (run_qa.py strips it), each with its first answer."""
    examples = []
    for e in read_squad_json(str(shared_data / "squad" / "v1.1" / "dev-v1.1.json"))[::50]:
        if len(reference(e.question.lstrip(), add_special_tokens=False)["input_ids"]) <= max_query:
            question = " " + e.question if len(examples) % 3 == 0 else e.question
            examples.append(SquadExample(e.qas_id, question, e.context, e.answers[:1]))
        if len(examples) == count:
            return examples
    raise AssertionError(f"fewer than {count} short questions")


def write_squad_file(examples, path):
    """`examples` as a SQuAD v1.1 JSON file at `path` (a paragraph each: the task's --train_file / --predict_file);
    returns `path`."""
    paragraphs = [{"context": e.context, "qas": [{"id": e.qas_id, "question": e.question, "answers": e.answers}]}
                  for e in examples]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return path


def assert_tagging_windows_equal_reference(windows, words, labels, reference):
    """Every sentence's windows, joined without their special tokens, hold the ids of `reference(words,
    is_split_into_words=True)` and a label on each word's first piece only; each window is `cls pieces sep pad...`.

    Returns: `(sentences in one window, sentences split over several)`.
    """
    encoding = reference(words, is_split_into_words=True)
    rows = {}
    for row, s in enumerate(windows.sentence):
        rows.setdefault(int(s), []).append(row)
    assert sorted(rows) == list(range(len(words)))
    whole = split = 0
    for s, sentence_rows in rows.items():
        ids, word_ids = encoding["input_ids"][s], encoding.word_ids(s)
        expected_labels = [IGNORE_LABEL if w is None or (j and word_ids[j - 1] == w) else labels[s][w]
                           for j, w in enumerate(word_ids)]
        inner_ids, inner_labels = [], []
        for row in sentence_rows:
            length = int(windows.inputs["input_mask"][row].sum())
            packed = windows.inputs["input_word_ids"][row, :length].tolist()
            assert packed[0] == reference.cls_token_id and packed[-1] == reference.sep_token_id
            np.testing.assert_array_equal(windows.inputs["input_word_ids"][row, length:], reference.pad_token_id)
            assert not windows.inputs["input_type_ids"][row].any()
            inner_ids += packed[1:-1]
            inner_labels += windows.labels[row, 1:length - 1].tolist()
        assert inner_ids == ids[1:-1] and inner_labels == expected_labels[1:-1], s
        whole += len(sentence_rows) == 1
        split += len(sentence_rows) > 1
    return whole, split


def assert_squad_windows_equal_run_qa(features, examples, reference, seq_length, doc_stride, special_tokens):
    """Each window's ids, mask and type ids equal `reference(question.lstrip(), context, truncation="only_second")`
    with `return_overflowing_tokens` and the overlap that makes its windows ours; its context pieces' character
    spans are the reference's offsets, and its training targets run_qa.py's.

    Args:
        special_tokens: special tokens in a pair (3 for `[CLS] Q [SEP] C [SEP]`, 4 for RoBERTa's).

    Returns: `(windows, windows holding their answer)`.
    """
    rows = {}
    for row, i in enumerate(features.example_index):
        rows.setdefault(int(i), []).append(row)
    windows = answered = 0
    for i, example_rows in rows.items():
        example = examples[i]
        question = example.question.lstrip()
        per_window = seq_length - len(reference(question, add_special_tokens=False)["input_ids"]) - special_tokens
        encoding = reference(question, example.context, truncation="only_second", max_length=seq_length,
                             stride=per_window - doc_stride, return_overflowing_tokens=True,
                             return_offsets_mapping=True, return_token_type_ids=True)
        assert len(encoding["input_ids"]) == len(example_rows), example.qas_id
        for w, row in enumerate(example_rows):
            length = int(features.inputs["input_mask"][row].sum())
            assert features.inputs["input_word_ids"][row, :length].tolist() == encoding["input_ids"][w]
            assert features.inputs["input_mask"][row, :length].tolist() == encoding["attention_mask"][w]
            assert features.inputs["input_type_ids"][row, :length].tolist() == encoding["token_type_ids"][w]
            np.testing.assert_array_equal(features.inputs["input_word_ids"][row, length:], reference.pad_token_id)
            expected_spans = [list(encoding["offset_mapping"][w][j]) if s == 1 else [-1, -1]
                              for j, s in enumerate(encoding.sequence_ids(w))]
            assert features.token_char_spans[row, :length].tolist() == expected_spans
            actual = (int(features.start_positions[row]), int(features.end_positions[row]))
            assert actual == run_qa_positions(encoding, w, example.answers[0]), (example.qas_id, w)
            windows += 1
            answered += actual != (0, 0)
    return windows, answered


def assert_tagger_export_equals_entity_tagger(out, tagger, model, texts, seq_length):
    """The tagger export's outputs `out` for `texts` (the last one empty, each other fitting one window) equal the
    `EntityTagger`'s: logits of the same windows, the same words (spans), tags and entities.

    Returns: the tagger's `split_words(texts)`, for family-specific checks.
    """
    split = tagger.split_words(texts)
    windows = build_windows([pieces for pieces, _ in split], seq_length, tagger.tokenizer.get_special_tokens_dict())
    assert list(windows.sentence) == list(range(len(texts) - 1))  # one window each; the empty text has none
    real = np.asarray(windows.inputs["input_mask"]).astype(bool)  # the export runs on the real tokens only
    np.testing.assert_allclose(out["logits"].numpy()[:len(texts) - 1][real], model(windows.inputs).numpy()[real],
                               atol=1e-5, rtol=0)
    tags = tagger._predict([pieces for pieces, _ in split])
    for t, (_, spans) in enumerate(split):
        n = int(out["num_words"][t])
        assert n == len(spans) and [s.decode() for s in out["word_labels"][t, :n].numpy()] == tags[t]
        assert list(zip(out["word_start"][t, :n].numpy(), out["word_end"][t, :n].numpy())) == spans
    for t, entities in enumerate(tagger(texts)):
        n = int(out["num_entities"][t])
        exported = [{"type": out["entity_type"][t, k].numpy().decode(), "start": int(out["entity_start"][t, k]),
                     "end": int(out["entity_end"][t, k]), "text": out["entity_text"][t, k].numpy().decode()}
                    for k in range(n)]
        assert exported == entities
    return split


def assert_squad_export_answers_as_postprocess(module, out, examples, features, model):
    """The SQuAD export's raw-text outputs `out` for `examples` (`module.serving_default`'s) equal `postprocess` over
    all their doc-stride `features` with every position a candidate: the same answers and character spans, and the
    logits of the answer's window; `num_windows` counts the features' windows. Returns the window counts."""
    from official_bert.data.squad_postprocessing import postprocess

    logits = {k: v.numpy() for k, v in model(features.inputs).items()}  # (windows, seq) each
    reference = postprocess(examples, features, logits["start_logits"], logits["end_logits"],
                            n_best_size=module.seq_length, max_answer_length=module.max_answer_length)
    counts = np.bincount(features.example_index, minlength=len(examples))
    np.testing.assert_array_equal(out["num_windows"].numpy(), counts)
    rows = np.searchsorted(features.example_index, np.arange(len(examples))) + out["answer_window"].numpy()
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(out[key].numpy(), logits[key][rows], atol=1e-5, rtol=0)
    for i, example in enumerate(examples):
        best = next(entry for entry in reference.nbest[example.qas_id] if entry["text"])
        assert out["answer_text"][i].numpy().decode() == reference.predictions[example.qas_id] == best["text"]
        assert (int(out["answer_start"][i]), int(out["answer_end"][i])) == (best["start"], best["end"])
    return counts
