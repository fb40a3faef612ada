"""load_task_weights with a checkpoint whose head does not fit the task's (another number of labels, another kind
of head): the encoder loads, the head starts fresh and the log says why; a checkpoint's own label names."""

import logging

import keras
import numpy as np

from official_bert import BertClassifier, BertEncoder, BertTokenClassifier
from official_bert.checkpoints import head_specs, load_task_weights, save_task_model
from official_bert.checkpoints.loading import checkpoint_label_names, follow_label_names


def _classifier_checkpoint(config, path, labels):
    keras.utils.set_random_seed(1)
    model = BertClassifier(BertEncoder(config), num_classes=len(labels), label_names=labels)
    save_task_model(model, str(path))
    return model


def test_another_number_of_labels_loads_the_encoder_and_a_fresh_head(tiny_config, tmp_path, caplog):
    source = _classifier_checkpoint(tiny_config, tmp_path / "mnli", ["entailment", "neutral", "contradiction"])
    model = BertClassifier(BertEncoder(tiny_config), num_classes=2)
    fresh_head = model.head.kernel.numpy()
    with caplog.at_level(logging.WARNING, logger="official_bert.checkpoints.loading"):
        assert not load_task_weights(model.encoder, head_specs(model), str(tmp_path / "mnli"),
                                     head_class="BertForSequenceClassification")
    assert "its head's 'classifier.weight' has shape (3, 32), this task's (2, 32) (another number of labels); the " \
           "task head starts from a fresh initialisation" in caplog.text
    np.testing.assert_array_equal(model.head.kernel.numpy(), fresh_head)
    np.testing.assert_array_equal(model.encoder.pooler.kernel.numpy(), source.encoder.pooler.kernel.numpy())


def test_a_sentence_classifiers_head_is_not_loaded_into_a_tagger(tiny_config, tmp_path, caplog):
    """BertForSequenceClassification and BertForTokenClassification both name their head `classifier.*`: with as
    many sentence classes as tags, only the checkpoint's `architectures` tells them apart."""
    _classifier_checkpoint(tiny_config, tmp_path / "sentences", [f"c{i}" for i in range(5)])
    tagger = BertTokenClassifier(BertEncoder(tiny_config), num_labels=5)
    with caplog.at_level(logging.WARNING, logger="official_bert.checkpoints.loading"):
        assert not load_task_weights(tagger.encoder, head_specs(tagger), str(tmp_path / "sentences"),
                                     optional_pooler=True, head_class="BertForTokenClassification")
    assert "its head is a BertForSequenceClassification's, not a BertForTokenClassification's" in caplog.text
    again = BertClassifier(BertEncoder(tiny_config), num_classes=5)
    assert load_task_weights(again.encoder, head_specs(again), str(tmp_path / "sentences"),
                             head_class="BertForSequenceClassification")


def test_a_checkpoints_label_names_are_its_own_id2label(tiny_config, tmp_path):
    _classifier_checkpoint(tiny_config, tmp_path / "named", ["pos", "neg"])
    assert checkpoint_label_names(str(tmp_path / "named")) == ["pos", "neg"]
    keras.utils.set_random_seed(1)
    save_task_model(BertClassifier(BertEncoder(tiny_config), num_classes=2), str(tmp_path / "unnamed"),
                    config_extras={"id2label": {"0": "LABEL_0", "1": "LABEL_1"}})  # transformers' default names
    assert checkpoint_label_names(str(tmp_path / "unnamed")) is None


def _two_label_classifier():
    from official_bert import BertConfig

    keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    inputs = {"input_word_ids": np.array([[1, 5, 7, 2]], np.int32), "input_mask": np.ones((1, 4), np.int32),
              "input_type_ids": np.zeros((1, 4), np.int32)}
    return BertClassifier(BertEncoder(config), num_classes=2, dropout_rate=0.0), inputs


def test_a_loaded_heads_labels_follow_this_tasks_order(caplog):
    """A checkpoint whose id2label is (pos, neg), for a task whose labels are sorted (neg, pos): the head's outputs
    are swapped, so each label keeps its logit (a classifier that always said "pos" says "pos")."""
    model, inputs = _two_label_classifier()
    before = model(inputs).numpy()
    with caplog.at_level("INFO", logger="official_bert.checkpoints.loading"):
        follow_label_names(model, ["pos", "neg"], ["neg", "pos"], "ck/pos_neg")
    np.testing.assert_allclose(model(inputs).numpy(), before[:, ::-1], rtol=1e-6)
    assert "ck/pos_neg: its head's labels are in the order pos, neg; reordered to this model's neg, pos" in caplog.text


def test_a_loaded_head_of_other_label_names_is_kept_and_said(caplog):
    model, inputs = _two_label_classifier()
    before = model(inputs).numpy()
    with caplog.at_level("WARNING", logger="official_bert.checkpoints.loading"):
        follow_label_names(model, ["negative", "positive"], ["0", "1"], "ck/sst2")
        follow_label_names(model, None, ["0", "1"], "ck/unnamed")  # transformers' default names: nothing to say
    np.testing.assert_array_equal(model(inputs).numpy(), before)
    assert caplog.messages == ["ck/sst2: its head was trained for the labels negative, positive; this model's are "
                               "0, 1: its outputs are read in this model's order"]
