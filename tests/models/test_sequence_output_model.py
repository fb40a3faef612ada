"""The task models on `sequence_output` (token classifier, span labeler) do not train the pooler, and leave the
caller's encoder as it was: its pooler still trains in any other model built on it."""

import dataclasses
import warnings

import numpy as np
import pytest

from official_bert import BertEncoder
from official_bert.models import BertClassifier, BertSpanLabeler, BertTokenClassifier

pytestmark = pytest.mark.slow

TASK_MODELS = {
    "token_classifier": (lambda encoder: BertTokenClassifier(encoder, num_labels=3),
                         np.ones((2, 7), np.int32)),
    "span_labeler": (BertSpanLabeler,
                     {"start_logits": np.array([1, 2]), "end_logits": np.array([3, 4])}),
}


def _inputs():
    rng = np.random.default_rng(0)
    return {"input_word_ids": rng.integers(1, 100, (2, 7)).astype(np.int32), "input_mask": np.ones((2, 7), np.int32),
            "input_type_ids": np.zeros((2, 7), np.int32)}


def _ids(variables):
    return {id(v) for v in variables}


@pytest.mark.parametrize("kind", sorted(TASK_MODELS))
def test_the_callers_encoder_keeps_a_trainable_pooler(tiny_config, kind):
    build, _ = TASK_MODELS[kind]
    encoder = BertEncoder(tiny_config)
    model = build(encoder)
    pooler = _ids(encoder.pooler.weights)
    assert encoder.pooler.trainable and all(v.trainable for v in encoder.pooler.weights)
    assert pooler <= _ids(encoder.trainable_weights)
    assert pooler <= _ids(BertClassifier(encoder, num_classes=2).trainable_weights)  # another model on it trains it
    assert not pooler & _ids(model.trainable_weights) and not pooler & _ids(model.trainable_variables)
    assert pooler <= _ids(model.non_trainable_weights) and pooler <= _ids(model.non_trainable_variables)
    assert len(model.trainable_weights) + len(model.non_trainable_weights) == len(model.weights)


@pytest.mark.parametrize("kind", sorted(TASK_MODELS))
def test_training_gives_the_pooler_no_slots_no_warning_and_still_saves_it(tiny_config, tmp_path, kind):
    build, labels = TASK_MODELS[kind]
    config = dataclasses.replace(tiny_config, num_hidden_layers=1)  # one layer: the pooler's slots do not need two
    model = build(BertEncoder(config))
    model.compile(optimizer="adam")  # the model's own loss
    before = [v.numpy().copy() for v in model.encoder.pooler.weights]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Gradients do not exist for variables ..." would fail here
        model.fit(_inputs(), labels, epochs=1, verbose=0)
    assert not [v.path for v in model.optimizer.variables if "pooler" in v.path]
    assert len(model.optimizer.variables) == 2 + 2 * len(model.trainable_variables)  # iteration, rate, 2 slots each
    for value, variable in zip(before, model.encoder.pooler.weights):
        np.testing.assert_array_equal(variable.numpy(), value)

    for variable in model.encoder.pooler.weights:
        variable.assign(np.full(variable.shape, 0.5, np.float32))
    model.save_weights(tmp_path / "model.weights.h5")
    restored = build(BertEncoder(config))
    restored.load_weights(tmp_path / "model.weights.h5")
    for variable in restored.encoder.pooler.weights:
        np.testing.assert_array_equal(variable.numpy(), np.full(variable.shape, 0.5, np.float32))
