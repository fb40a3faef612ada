"""`model.export(dir)` of a task model built by `from_pretrained`: the raw-text TF-Serving SavedModel of `python -m
export.saved_model`, answering the model's own label strings and its predictions' probabilities, and passing TF
Serving's session-based loader with its warm-up requests (`session_loader_check.py`)."""

import os

import numpy as np
import pytest

from fresh_process import fresh_process_outputs_and_tool_checks

pytestmark = pytest.mark.slow  # trains, exports three models and starts a fresh process
TEXTS = ["a gripping, moving film", "a dull film", "it was fine", "the best film of the year"]
LABELS = ["pos", "neg", "meh", "pos"]
MULTI_LABELS = ["battery", "screen", "support"]


@pytest.fixture(scope="module")
def exported(tiny_checkpoint, tmp_path_factory):
    """(the trained classifier and multi-label classifier, the untrained tagger, their version directories,
    fresh-process outputs and session_loader_check results)."""
    import keras

    from official_bert import BertClassifier, BertTokenClassifier

    keras.utils.set_random_seed(0)
    classifier = BertClassifier.from_pretrained(tiny_checkpoint, labels=["neg", "pos", "meh"], seq_length=16)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2))
    classifier.fit(TEXTS, LABELS, batch_size=2, epochs=1, verbose=0)  # 2 steps
    multi_label = BertClassifier.from_pretrained(tiny_checkpoint, labels=MULTI_LABELS, multi_label=True,
                                                 seq_length=16)
    multi_label.compile(optimizer=keras.optimizers.Adam(1e-2))
    multi_label.fit(TEXTS, [["battery", "support"], [], ["screen"], ["battery"]], batch_size=2, verbose=0)
    tagger = BertTokenClassifier.from_pretrained(tiny_checkpoint, labels=["O", "B-MISC", "I-MISC"], seq_length=16)
    out = tmp_path_factory.mktemp("task_model_export")
    versions = {"classifier": classifier.export(str(out / "classifier")), "tagger": tagger.export(str(out / "tagger")),
                "multi_label": multi_label.export(str(out / "multi_label"))}
    requests = {name: {"dir": path, "signatures": {"serving_default": {"text": TEXTS}}}
                for name, path in versions.items()}
    outputs, checks = fresh_process_outputs_and_tool_checks(out, requests, list(versions.values()))
    return {"classifier": classifier, "multi_label": multi_label, "tagger": tagger}, versions, outputs, checks


def test_the_export_answers_the_models_probabilities_and_label_strings(exported):
    models, versions, outputs, _ = exported
    classifier = models["classifier"]
    answer = outputs["classifier"]
    logits = classifier.predict(TEXTS, verbose=0)  # (4, 3)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(answer["serving_default/probabilities"], probabilities, atol=1e-5)
    expected = [["neg", "pos", "meh"][i] for i in logits.argmax(axis=1)]
    assert [label.decode() for label in answer["serving_default/label"]] == expected
    assert versions["classifier"].endswith(os.path.join("classifier", "1"))
    with open(os.path.join(versions["classifier"], "assets", "labels.txt"), encoding="utf-8") as f:
        assert f.read().split() == ["neg", "pos", "meh"]


def test_a_multi_label_export_answers_each_labels_probability_and_the_labels_over_the_threshold(exported):
    models, _, outputs, _ = exported
    answer = outputs["multi_label"]
    probabilities = 1 / (1 + np.exp(-models["multi_label"].predict(TEXTS, verbose=0)))  # (4, 3) sigmoid
    np.testing.assert_allclose(answer["serving_default/probabilities"], probabilities, atol=1e-5)
    expected = [[name if p > 0.5 else "" for name, p in zip(MULTI_LABELS, row)] for row in probabilities]
    assert [[label.decode() for label in row] for row in answer["serving_default/labels"]] == expected


def test_the_tagger_export_answers_its_tag_names(exported):
    models, _, outputs, _ = exported
    tagger = models["tagger"]
    answer = outputs["tagger"]
    words = [[label.decode() for label in row[:count]] for row, count in
             zip(answer["serving_default/word_labels"], answer["serving_default/num_words"])]
    assert [len(row) for row in words] == [len(text.replace(",", " ,").split()) for text in TEXTS]
    assert {label for row in words for label in row} <= {"O", "B-MISC", "I-MISC"}
    logits = tagger.predict(TEXTS, verbose=0)  # (4, 16, 3): every packed piece
    real = tagger.preprocessor([np.array(TEXTS)])["input_mask"].numpy().astype(bool)  # (4, 16)
    served = answer["serving_default/logits"]  # (4, longest text's pieces, 3)
    np.testing.assert_allclose(served[real[:, :served.shape[1]]], logits[real], atol=1e-5)


def test_every_export_passes_tf_servings_session_loader_with_their_warmup_requests(exported):
    _, versions, _, checks = exported
    for path in versions.values():
        code, printed = checks[path]
        assert code == 0, printed
