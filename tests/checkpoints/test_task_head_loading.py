"""load_task_weights with a checkpoint whose head does not fit the task's (another number of labels, another kind
of head): the encoder loads, the head starts fresh and the log says why; a checkpoint's own label names."""

import logging

import keras
import numpy as np

from official_bert import BertClassifier, BertEncoder, BertTokenClassifier
from official_bert.checkpoints import head_specs, load_task_weights, save_task_model
from official_bert.checkpoints.loading import checkpoint_label_names


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
           "head starts from a fresh initialisation" in caplog.text
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

