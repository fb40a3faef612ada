"""TextInputs: task models that take raw strings through their own preprocessor, and refuse them without one."""

import io
import json

import numpy as np
import pytest

from official_bert.models.text_inputs import text_segments
from tests.conftest import logger_messages, write_tiny_checkpoint
from tests.tasks.forked_commands import run_python

TEXTS = ["a gripping, moving film", "a dull film", "it was fine", "the best film of the year"]
LABELS = ["pos", "neg", "meh", "pos"]
PREPROCESSING_LOGGER = "official_bert.text.preprocessing"


def _cut_warnings(caplog):
    """The preprocessor's captured warnings (texts cut), without other loggers'."""
    return logger_messages(caplog, PREPROCESSING_LOGGER)


def test_text_segments_of_each_input_form():
    names, parts = text_segments(TEXTS)
    assert names == ("text",) and parts[0].tolist() == TEXTS
    assert text_segments(np.array(TEXTS))[1][0].tolist() == TEXTS
    assert text_segments((TEXTS, TEXTS[::-1]))[0] == ("text", "text_b")
    names, parts = text_segments({"premise": TEXTS, "hypothesis": np.array(TEXTS[::-1])})
    assert names == ("premise", "hypothesis") and parts[1].tolist() == TEXTS[::-1]
    packed = {"input_word_ids": np.zeros((2, 4), np.int32)}
    assert text_segments(packed) is None and text_segments(np.zeros((2, 4), np.int32)) is None


def test_text_segments_refuses_what_is_not_a_batch_of_texts():
    with pytest.raises(TypeError, match="pass a list of texts"):
        text_segments("one text")
    with pytest.raises(ValueError, match="at most two"):
        text_segments((TEXTS, TEXTS, TEXTS))
    with pytest.raises(ValueError, match=r"differ in count: text, text_b have \[4, 3\]"):
        text_segments((TEXTS, TEXTS[:3]))


def test_text_segments_of_pandas_columns_and_of_no_examples():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"premise": TEXTS, "hypothesis": TEXTS[::-1]})  # pandas' own string dtype
    names, parts = text_segments(frame)
    assert names == ("premise", "hypothesis") and parts[1].tolist() == TEXTS[::-1] and parts[0].dtype == object
    assert text_segments(frame["premise"])[1][0].tolist() == TEXTS
    assert text_segments((frame["premise"], frame["hypothesis"]))[0] == ("text", "text_b")
    for empty in (np.array([]), np.array([], dtype=object), frame["premise"][:0]):
        with pytest.raises(ValueError, match=r"got no examples \(an empty batch of texts\); pass at least one"):
            text_segments(empty)


def test_a_missing_text_among_strings_is_named_with_its_index():
    with pytest.raises(ValueError, match=r"texts\[1\] is None, not a string: every example needs its text"):
        text_segments(["a film", None, "a play"])
    with pytest.raises(ValueError, match=r"text_b\[0\] is 3, not a string"):
        text_segments((TEXTS[:2], [3, "x"]))
    with pytest.raises(ValueError, match=r"hypothesis\[2\] is None"):
        text_segments({"premise": TEXTS[:3], "hypothesis": np.array(["a", "b", None], dtype=object)})
    assert text_segments([[1, 2], [3, 4]]) is None  # packed ids: no strings, not text


def test_an_empty_pandas_cell_is_named_with_its_index():
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(io.StringIO("review,verdict\nA lovely film.,good\n,bad\n"))  # the second review empty
    with pytest.raises(ValueError, match=r"texts\[1\] is nan, not a string.*fillna"):
        text_segments(frame["review"])


@pytest.fixture(scope="module")
def classifier(tiny_checkpoint):
    """A 3-label classifier from the tiny checkpoint, preprocessor included (seq_length 16)."""
    import keras

    from official_bert import BertClassifier

    keras.utils.set_random_seed(0)
    model = BertClassifier.from_pretrained(tiny_checkpoint, labels=["neg", "pos", "meh"], seq_length=16)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    return model


@pytest.mark.slow
def test_fit_on_texts_and_string_labels_trains_and_predict_takes_texts(classifier):
    before = [w.numpy().copy() for w in classifier.head.weights]
    history = classifier.fit(TEXTS, LABELS, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, classifier.head.weights))
    assert classifier.text_features == ("text",)
    logits = classifier.predict(TEXTS, verbose=0)  # (4, 3): logits, as Keras (not label names)
    packed = classifier.preprocessor([np.array(TEXTS)])  # the packed ints still work as before
    np.testing.assert_allclose(logits, classifier.predict(packed, verbose=0), atol=1e-6)
    loss, accuracy = classifier.evaluate(np.array(TEXTS), np.array(LABELS), verbose=0)
    assert np.isfinite(loss) and 0 <= accuracy <= 1


@pytest.mark.slow
def test_calling_the_model_and_the_on_batch_methods_take_texts_and_label_names(classifier):
    logits = classifier.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(classifier(TEXTS).numpy(), logits, atol=1e-6)  # model(texts), as Keras' model(x)
    np.testing.assert_allclose(classifier.predict_on_batch(np.array(TEXTS)), logits, atol=1e-6)
    loss, accuracy = classifier.test_on_batch(TEXTS, LABELS)
    assert np.isfinite(loss) and 0 <= accuracy <= 1
    before = [w.numpy().copy() for w in classifier.head.weights]
    assert np.isfinite(classifier.train_on_batch(TEXTS, LABELS, return_dict=True)["loss"])
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, classifier.head.weights))
    with pytest.raises(TypeError, match="got the single string 'a dull film'; pass a list of texts"):
        classifier("a dull film")
    with pytest.raises(ValueError, match=r"got no examples \(an empty batch of texts\)"):
        classifier.predict(np.array([]), verbose=0)


@pytest.mark.slow
def test_texts_that_do_not_fit_are_counted_in_a_warning(classifier, caplog):
    import logging

    long_text = " ".join(["film"] * 20)  # 20 pieces: the classifier packs 16, special tokens included
    with caplog.at_level(logging.WARNING, logger=PREPROCESSING_LOGGER):
        classifier.predict(TEXTS, verbose=0)
        classifier(TEXTS)
        assert _cut_warnings(caplog) == []
        classifier.predict(TEXTS + [long_text], verbose=0)
        classifier([long_text])
    line = "{} do not fit seq_length=16 and are cut, the longest text first"
    assert _cut_warnings(caplog) == [line.format("1 of 5 texts (20.0%)"), line.format("1 of 1 texts (100.0%)")]


@pytest.mark.slow
def test_texts_of_a_dataset_that_do_not_fit_are_counted_as_read(classifier, caplog):
    """A `tf.data` pipeline's texts are counted as the map packs them: exactly the dataset's for a `predict` or an
    `evaluate` that reads it to its end, each epoch's again in `fit`; the count of those cut equals the
    preprocessor's eager count on the same texts."""
    import logging

    import tensorflow as tf

    texts = TEXTS + [" ".join(["film"] * 20), "a " * 30]  # the last two do not fit 16 pieces
    assert classifier.preprocessor.count_truncated([texts]) == 2
    labeled = tf.data.Dataset.from_tensor_slices((texts, [1, 0, 2, 1, 0, 1])).batch(4)
    line = "{} of {} {} ({:.1f}%) do not fit seq_length=16 and are cut, the longest text first"
    with caplog.at_level(logging.WARNING, logger=PREPROCESSING_LOGGER):
        classifier.predict(tf.data.Dataset.from_tensor_slices(TEXTS).batch(3), verbose=0)
        assert _cut_warnings(caplog) == []
        classifier.predict(tf.data.Dataset.from_tensor_slices(texts).batch(4), verbose=0)
        classifier.evaluate(labeled, verbose=0)
        classifier.fit(labeled, validation_data=labeled, epochs=2, verbose=0)
    read = "texts read from the dataset"
    assert _cut_warnings(caplog) == [line.format(2, 6, read, 100 * 2 / 6), line.format(2, 6, read, 100 * 2 / 6),
                                     line.format(4, 12, read, 100 * 4 / 12),
                                     line.format(4, 12, "validation " + read, 100 * 4 / 12)]


@pytest.mark.slow
def test_pandas_columns_of_texts_and_label_names(classifier):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"review": TEXTS, "label": LABELS})
    history = classifier.fit(frame["review"], frame["label"], batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_allclose(classifier.predict(frame["review"], verbose=0), classifier.predict(TEXTS, verbose=0),
                               atol=1e-6)
    loss, accuracy = classifier.evaluate(frame[["review"]], frame["label"], verbose=0)  # a one-column frame
    assert np.isfinite(loss) and 0 <= accuracy <= 1


@pytest.mark.slow
def test_datasets_of_texts_pairs_and_validation_split(classifier):
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, [1, 0, 2, 1])).batch(2)
    history = classifier.fit(dataset, validation_data=(TEXTS, LABELS), epochs=1, verbose=0)
    assert "val_loss" in history.history
    texts_only = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    np.testing.assert_allclose(classifier.predict(texts_only, verbose=0), classifier.predict(TEXTS, verbose=0),
                               atol=1e-6)
    pairs = classifier.predict({"text": TEXTS, "text_b": TEXTS[::-1]}, verbose=0)  # [CLS] a [SEP] b [SEP]
    assert pairs.shape == (4, 3) and not np.allclose(pairs, classifier.predict(TEXTS, verbose=0))
    history = classifier.fit(TEXTS * 2, LABELS * 2, validation_split=0.25, batch_size=4, verbose=0)
    assert "val_loss" in history.history
    history = classifier.fit(TEXTS, LABELS, 2, 2, 0)  # Keras' positional order: batch_size, epochs, verbose
    assert len(history.history["loss"]) == 2
    assert len(classifier.evaluate(TEXTS, LABELS, 2, 0)) == 2  # batch_size, verbose: [loss, accuracy]


@pytest.mark.slow
def test_labels_outside_the_models_and_a_different_text_count_are_refused(classifier):
    with pytest.raises(ValueError, match=r"labels \['great'\] are not among the model's label_names"):
        classifier.fit(TEXTS, ["pos", "great", "neg", "neg"], verbose=0)
    classifier.text_features = None
    classifier.fit(TEXTS[:2], LABELS[:2], verbose=0)
    with pytest.raises(ValueError, match=r"got 2 text\(s\) per example, but the model takes 1 \(text\)"):
        classifier.fit((TEXTS, TEXTS), LABELS, verbose=0)


@pytest.mark.slow
def test_a_task_model_without_a_preprocessor_says_in_one_line_what_to_do_with_strings(tiny_config):
    import tensorflow as tf

    from official_bert import BertClassifier, BertEncoder, BertTokenClassifier

    classifier = BertClassifier(BertEncoder(tiny_config), num_classes=2)
    classifier.compile(optimizer="adam")
    for call in (lambda: classifier.fit(np.array(TEXTS), np.array([0, 1, 0, 1]), verbose=0),
                 lambda: classifier.evaluate(TEXTS, [0, 1, 0, 1], verbose=0),
                 lambda: classifier.predict(tf.data.Dataset.from_tensor_slices(TEXTS).batch(2), verbose=0)):
        with pytest.raises(ValueError) as error:
            call()
        assert "\n" not in str(error.value)
        assert str(error.value).startswith("BertClassifier got strings but has no preprocessor: build it with "
                                           "BertClassifier.from_pretrained(path, ...)")
    with pytest.raises(ValueError, match="BertTokenClassifier got strings but has no preprocessor"):
        BertTokenClassifier(BertEncoder(tiny_config), num_labels=3).predict(TEXTS, verbose=0)


# A process that imported only TensorFlow (a fork-server child): only what the .keras file holds (and `import
# official_bert`, which registers our classes).
LOAD_AND_PREDICT = """
import json, sys
import numpy as np
import keras
import official_bert
model = keras.saving.load_model(sys.argv[1])
np.save(sys.argv[2], model.predict(json.loads(sys.argv[3]), verbose=0))
print(json.dumps([list(model.label_names), list(model.text_features), model.preprocessor.seq_length]))
"""


@pytest.mark.slow
def test_keras_file_round_trip_in_a_fresh_process_keeps_the_preprocessor(classifier, tiny_checkpoint, tmp_path):
    import json
    import pathlib
    import zipfile

    classifier.fit(TEXTS, LABELS, batch_size=2, verbose=0)
    path = tmp_path / "classifier.keras"
    classifier.save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json").decode("utf-8")
    assert str(tiny_checkpoint) not in config and '"vocab_file": null' in config  # the vocabulary is inline
    root = pathlib.Path(__file__).resolve().parents[2]
    result = run_python(["-c", LOAD_AND_PREDICT, path, tmp_path / "logits.npy", json.dumps(TEXTS)], cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [["neg", "pos", "meh"], ["text"], 16]
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), classifier.predict(TEXTS, verbose=0), atol=1e-6)


@pytest.mark.slow
def test_the_from_python_example_of_docs_your_data_runs(monkeypatch, tmp_path, shared_data):
    """docs/your-data.md's "From Python" blocks, as written but for the checkpoint: fine-tune on three texts, predict,
    save, load and export. The page's all-MiniLM-L6-v2 is a 1-layer hidden-32 checkpoint in the same Hugging Face
    layout here (with 128 positions, for `from_pretrained`'s default length): a sixth of the tracing; MiniLM's own
    loading is checked against transformers in tests/checkpoints and tests/export/test_minilm_export.py."""
    import os
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    section = (root / "docs" / "your-data.md").read_text(encoding="utf-8").split("## From Python\n", 1)[1]
    train, save = re.findall(r"^```python\n(.*?)^```$", section, re.M | re.S)[:2]
    page_checkpoint = '"../shared/data/all-MiniLM-L6-v2"'
    assert train.count(page_checkpoint) == 1, train
    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint", 1, shared_data, max_position_embeddings=128)
    train = train.replace(page_checkpoint, repr(str(checkpoint)))
    namespace = {"__name__": "__docs__"}
    monkeypatch.chdir(root)
    exec(compile(train, "docs/your-data.md (From Python, 1)", "exec"), namespace)
    assert namespace["probabilities"].shape == (1, 3)
    before = namespace["model"].predict(["What a film!"], verbose=0)
    monkeypatch.chdir(tmp_path)
    exec(compile(save, "docs/your-data.md (From Python, 2)", "exec"), namespace)
    np.testing.assert_allclose(namespace["model"].predict(["What a film!"], verbose=0), before, atol=1e-6)
    assert os.path.isfile(tmp_path / "out" / "export" / "reviews" / "1" / "saved_model.pb")
    config = json.loads((tmp_path / "out" / "hf" / "reviews" / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert list(config["id2label"].values()) == list(namespace["model"].label_names)


SENTENCES = [["peter", "flew", "to", "paris"], ["the", "eu", "rejects", "german", "calls"]]
TAGS = [["B-PER", "O", "O", "B-LOC"], ["O", "B-ORG", "O", "B-MISC", "O"]]


@pytest.fixture(scope="module")
def tagger(tiny_checkpoint):
    """A token classifier from the tiny checkpoint, preprocessor included (seq_length 16: 14 pieces a window)."""
    import keras

    from official_bert import BertTokenClassifier

    keras.utils.set_random_seed(0)
    model = BertTokenClassifier.from_pretrained(tiny_checkpoint, labels=["O", "B-PER", "B-LOC", "B-ORG", "B-MISC"],
                                                seq_length=16)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    return model


@pytest.mark.slow
def test_a_tagger_fits_on_sentences_of_words_and_predicts_each_words_logits(tagger):
    before = [w.numpy().copy() for w in tagger.head.weights]
    history = tagger.fit(SENTENCES, TAGS, batch_size=2, validation_data=(SENTENCES, TAGS), verbose=0)
    assert np.isfinite(history.history["loss"]).all() and "val_loss" in history.history
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, tagger.head.weights))
    assert np.isfinite(tagger.evaluate(SENTENCES, TAGS, verbose=0)).all()
    words = tagger.predict(SENTENCES, verbose=0)  # per sentence: (words, 5)
    assert [w.shape for w in words] == [(4, 5), (5, 5)]
    # a sentence of no words has no logits (with others, or alone); a tuple of words is a sentence too
    assert [w.shape for w in tagger.predict([[], SENTENCES[0]], verbose=0)] == [(0, 5), (4, 5)]
    assert [w.shape for w in tagger.predict([[]], verbose=0)] == [(0, 5)]
    np.testing.assert_allclose(tagger.predict([tuple(SENTENCES[0])], verbose=0)[0], words[0], atol=1e-6)
    # These words tokenize alone as in the sentence: each word's logits are the raw text's at its first piece.
    pieces = [len(tagger.preprocessor.tokenize(np.array(sentence)).to_list()[i]) for sentence in SENTENCES
              for i in range(len(sentence))]
    text_logits = tagger.predict([" ".join(sentence) for sentence in SENTENCES], verbose=0)  # (2, 16, 5)
    first_piece = 1
    for k, size in enumerate(pieces[:4]):
        np.testing.assert_allclose(words[0][k], text_logits[0, first_piece], atol=1e-5)
        first_piece += size


@pytest.mark.slow
def test_a_sentence_longer_than_a_window_keeps_every_word(tagger):
    long = ["paris"] * 20  # 20 pieces: two windows of whole words
    words = tagger.predict([long, SENTENCES[0]], verbose=0)
    assert [w.shape[0] for w in words] == [20, 4]
    assert np.all(np.any(words[0] != 0, axis=1))  # every word has its logits, the second window's 6 too
    with pytest.raises(ValueError, match="sentence 1: 5 words but 4 tags"):
        tagger.fit(SENTENCES, [TAGS[0], TAGS[0]], verbose=0)
