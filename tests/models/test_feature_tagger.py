"""FeatureTagger: a BiLSTM over frozen MiniLM features of CoNLL-2003 words, trained a few steps and scored."""

import keras
import numpy as np
import pytest

from official_bert.labels import IGNORE_LABEL

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def conll_features(shared_data, minilm_dir):
    """Features (words, 7, 384) of the first 200 training sentences, their WordFeatures and label ids."""
    from official_bert.data.conll import label_names, read_conll
    from official_bert.data.tagging_dataset import word_pieces
    from official_bert.data.word_feature_dataset import WordFeatures
    from official_bert.pipelines.feature_extractor import FeatureExtractor

    examples = read_conll(str(shared_data / "conll2003" / "hf-iob2" / "train.txt"))
    words, tags = examples.words[:200], examples.tags[:200]
    extractor = FeatureExtractor.from_pretrained(str(minilm_dir), layers=list(range(7)), batch_size=64)
    features = extractor.word_features(word_pieces(extractor.tokenizer, words))
    labels = label_names(examples.tags)
    ids = [[labels.index(t) for t in sentence] for sentence in tags]
    return WordFeatures(features, [len(w) for w in words]), ids, tags, labels


def test_defaults_are_the_papers_and_config_round_trips():
    from official_bert.models.feature_tagger import FeatureTagger

    tagger = FeatureTagger(num_labels=9, num_layers=4, hidden_size=16, combine="sum")
    assert tagger.lstm_units == 768 and tagger.lstm_layers == 2
    again = FeatureTagger.from_config(tagger.get_config())
    assert again.get_config() == tagger.get_config()
    assert [w.shape for w in again.weights] == [w.shape for w in tagger.weights]
    with pytest.raises(ValueError, match="combine"):
        FeatureTagger(9, 1, 16, combine="max")


@pytest.mark.parametrize("combine", ["concat", "sum", "mean"])
def test_padding_does_not_change_real_words(combine):
    from official_bert.models.feature_tagger import FeatureTagger

    keras.utils.set_random_seed(0)
    tagger = FeatureTagger(5, 3, 8, combine, lstm_units=6)
    features = np.random.default_rng(0).normal(size=(1, 4, 3, 8)).astype(np.float32)
    alone = tagger({"features": features, "word_mask": np.ones((1, 4), np.int32)}).numpy()
    padded_features = np.concatenate([features, np.full((1, 3, 3, 8), 7.0, np.float32)], axis=1)
    mask = np.array([[1, 1, 1, 1, 0, 0, 0]], np.int32)
    padded = tagger({"features": padded_features, "word_mask": mask}).numpy()
    assert alone.shape == (1, 4, 5)
    np.testing.assert_allclose(padded[:, :4], alone, atol=1e-5)  # the backward LSTM skips the padding


def test_trains_on_conll_features_and_scores_entities(conll_features):
    from official_bert.data.word_feature_dataset import word_feature_dataset
    from official_bert.metrics.tagging import entity_scores
    from official_bert.models.feature_tagger import FeatureTagger

    data, ids, tags, labels = conll_features
    layers = [3, 4, 5, 6]  # the paper's last four hidden layers
    keras.utils.set_random_seed(0)
    tagger = FeatureTagger(len(labels), len(layers), 384, "concat", lstm_units=32)
    tagger.compile(optimizer=keras.optimizers.Adam(3e-3), loss=tagger.default_loss())
    train = word_feature_dataset(data, ids, batch_size=16, layers=layers, is_training=True)
    inputs, batch_labels = next(iter(train))
    assert inputs["features"].shape[2:] == (4, 384)
    assert (batch_labels.numpy() == IGNORE_LABEL).sum() == (inputs["word_mask"].numpy() == 0).sum()
    initial_loss = tagger.evaluate(train, steps=2, verbose=0)  # about log(9) = 2.2
    tagger.fit(train, epochs=1, steps_per_epoch=30, verbose=0)
    final_loss = tagger.evaluate(train, steps=2, verbose=0)
    assert initial_loss > 1.5 and final_loss < 0.6 * initial_loss, (initial_loss, final_loss)

    batches = word_feature_dataset(data, None, batch_size=64, layers=layers, is_training=False)
    predicted = data.word_predictions((tagger.predict_on_batch(x) for x in batches), batch_size=64)
    assert [len(p) for p in predicted] == [len(t) for t in tags]
    scores = entity_scores(tags, [[labels[i] for i in p] for p in predicted])
    assert scores["num_true"] > 200 and scores["num_correct"] > 0 and 0 < scores["f1"] < 1, scores
