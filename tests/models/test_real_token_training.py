"""Training on real tokens only (`RealTokenTraining.trains_on_real_tokens`): a classifier's and a token classifier's
training calls run the encoder on the batch's real tokens, with the padded model's logits and gradients (no
dropout), for every family; a span labeler's too, with its softmax over the real tokens only; XLA-compiled models
and models built with `train_on_real_tokens=False` (saved in their config) train on the padded batch."""

import dataclasses

import keras
import numpy as np
import pytest

from official_bert import BertClassifier, BertConfig, BertEncoder
from official_bert.models import BertSpanLabeler, BertTokenClassifier
from official_bert.layers.attention import MASKED_LOGIT
from official_bert.models.span_labeler import SPAN_OUTPUTS
from tiny_families import FAMILIES, padded_inputs

tf = pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's training path")]

def _model(family, kind, dropout=0.0, train_on_real_tokens=True):
    config = BertConfig.from_dict(FAMILIES[family])
    head_dropout = {} if config.qa_dropout_prob is None else {"qa_dropout_prob": dropout}  # DistilBERT's span head's
    config = dataclasses.replace(config, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                                 **head_dropout)
    keras.utils.set_random_seed(4)
    options = dict(train_on_real_tokens=train_on_real_tokens)
    if kind == "classifier":
        return BertClassifier(BertEncoder(config), num_classes=3, dropout_rate=dropout, **options)
    if kind == "span":
        return BertSpanLabeler(BertEncoder(config), **options)
    return BertTokenClassifier(BertEncoder(config), num_labels=5, dropout_rate=dropout, **options)


def _padded_twin(model, family, kind):
    """The same model built with `train_on_real_tokens=False`, with `model`'s weights."""
    padded = _model(family, kind, train_on_real_tokens=False)
    padded.set_weights(model.get_weights())
    return padded


# Seven texts: in the attention's length groups (`ATTENTION_GROUPS` of 2), the last group has an empty sequence.
UNEQUAL_LENGTHS = [4, 12, 7, 9, 2, 12, 5]


def _inputs(lengths):
    return {name: tf.constant(value) for name, value in padded_inputs(lengths).items()}


def _logits_and_gradients(model, inputs):
    """A training call's logits (at the real tokens for a token classifier) and the gradients of a loss that
    weighs every logit differently."""
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        if len(logits.shape) == 3:
            logits = logits * tf.cast(inputs["input_mask"], logits.dtype)[..., None]  # the padding's logits: no loss
        loss = tf.reduce_sum(logits * tf.sin(tf.reshape(tf.range(tf.size(logits), dtype=tf.float32), logits.shape)))
    return logits.numpy(), tape.gradient(loss, model.trainable_variables)


@pytest.mark.parametrize("kind", ["classifier", "tagger"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_training_call_on_real_tokens_has_the_padded_models_logits_and_gradients(family, kind, monkeypatch):
    model = _model(family, kind)
    inputs = _inputs(UNEQUAL_LENGTHS)
    assert model.trains_on_real_tokens()
    padded_model = _padded_twin(model, family, kind)
    real_token_calls = []
    for each in (model, padded_model):
        head = each.real_token_outputs

        def counted(*args, head=head, **kwargs):
            real_token_calls.append(kwargs)
            return head(*args, **kwargs)

        monkeypatch.setattr(each, "real_token_outputs", counted)
    logits, gradients = _logits_and_gradients(model, inputs)
    assert real_token_calls == [{"training": True}]
    padded_logits, padded_gradients = _logits_and_gradients(padded_model, inputs)
    assert len(real_token_calls) == 1
    np.testing.assert_allclose(logits, padded_logits, atol=2e-5, rtol=1e-5)
    assert len(gradients) == len(padded_gradients) == len(model.trainable_variables)
    for variable, ours, padded in zip(model.trainable_variables, gradients, padded_gradients):
        assert (ours is None) == (padded is None), variable.path
        if ours is not None:
            np.testing.assert_allclose(tf.convert_to_tensor(ours).numpy(), tf.convert_to_tensor(padded).numpy(),
                                       atol=2e-5, rtol=1e-4, err_msg=variable.path)


def _span_loss_and_gradients(model, inputs, padding_logits):
    """A training call's span logits, and the gradients of the default loss (labels at real tokens) computed on
    them after `padding_logits` is applied."""
    labels = {"start_logits": tf.constant([0, 5, 2, 3, 1, 7, 4]),  # at real tokens of UNEQUAL_LENGTHS
              "end_logits": tf.constant([3, 11, 6, 8, 1, 10, 4])}
    loss = model.default_loss()["start_logits"]
    with tf.GradientTape() as tape:
        logits = padding_logits(model(inputs, training=True))
        total = sum(loss(labels[name], logits[name]) for name in SPAN_OUTPUTS)
    return {name: logits[name].numpy() for name in SPAN_OUTPUTS}, tape.gradient(total, model.trainable_variables)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_span_labelers_training_call_on_real_tokens_leaves_the_padding_out_of_the_softmax(family):
    model = _model(family, "span")
    inputs = _inputs(UNEQUAL_LENGTHS)
    is_real = inputs["input_mask"] > 0
    assert model.trains_on_real_tokens()
    logits, gradients = _span_loss_and_gradients(model, inputs, lambda logits: logits)
    masked = {name: np.where(is_real.numpy(), logits[name], 0.0) for name in SPAN_OUTPUTS}
    padded_logits, padded_gradients = _span_loss_and_gradients(
        _padded_twin(model, family, "span"), inputs,
        lambda logits: {name: tf.where(is_real, logits[name], MASKED_LOGIT) for name in SPAN_OUTPUTS})
    for name in SPAN_OUTPUTS:
        np.testing.assert_array_equal(logits[name][~is_real.numpy()], MASKED_LOGIT)
        np.testing.assert_allclose(masked[name], np.where(is_real.numpy(), padded_logits[name], 0.0),
                                   atol=2e-5, rtol=1e-5)
    assert len(gradients) == len(padded_gradients) == len(model.trainable_variables)
    for variable, ours, padded in zip(model.trainable_variables, gradients, padded_gradients):
        np.testing.assert_allclose(tf.convert_to_tensor(ours).numpy(), tf.convert_to_tensor(padded).numpy(),
                                   atol=2e-5, rtol=1e-4, err_msg=variable.path)


def test_a_span_labelers_inference_call_keeps_the_padded_models_logits():
    model = _model("bert", "span")
    inputs = _inputs([4, 12, 7])
    logits = model(inputs, training=False)
    padded = _padded_twin(model, "bert", "span")(inputs, training=False)
    for name in SPAN_OUTPUTS:
        np.testing.assert_array_equal(logits[name].numpy(), padded[name].numpy())
    assert np.all(np.abs(logits["start_logits"].numpy()) < 100)  # the padding's own logits, not MASKED_LOGIT


def test_a_training_call_on_real_tokens_applies_dropout():
    model = _model("bert", "classifier", dropout=0.5)
    inputs = _inputs([4, 12, 7])
    first, second = (model(inputs, training=True).numpy() for _ in range(2))
    assert not np.allclose(first, second)
    np.testing.assert_array_equal(model(inputs, training=False).numpy(), model(inputs, training=False).numpy())


def test_fit_trains_on_real_tokens_without_xla_and_on_the_padded_batch_with_it():
    model = _model("bert", "classifier")
    model.compile(optimizer="adam", jit_compile=False)
    assert model.trains_on_real_tokens()
    inputs = _inputs([4, 12, 7, 9])
    labels = tf.constant([0, 1, 2, 1])
    losses = [model.train_on_batch(inputs, labels) for _ in range(5)]
    assert losses[-1] < losses[0]
    model.compile(optimizer="adam", jit_compile=True)
    assert not model.trains_on_real_tokens()


def test_a_model_under_a_tpu_strategy_trains_on_the_padded_batch(monkeypatch):
    from unittest import mock

    model = _model("bert", "classifier")
    assert model.trains_on_real_tokens()
    monkeypatch.setattr(tf.distribute, "get_strategy",
                        lambda: mock.create_autospec(tf.distribute.TPUStrategy, instance=True))
    assert not model.trains_on_real_tokens()
    monkeypatch.undo()
    assert not _model("bert", "classifier", train_on_real_tokens=False).trains_on_real_tokens()


@pytest.mark.parametrize("kind", ["classifier", "tagger", "span"])
def test_train_on_real_tokens_is_a_constructor_argument_saved_in_the_config(kind):
    model = _model("bert", kind, train_on_real_tokens=False)
    with pytest.raises(AttributeError):
        model.train_on_real_tokens = True  # not a switch set from outside
    config = model.get_config()
    assert config["train_on_real_tokens"] is False
    assert not type(model).from_config(config).trains_on_real_tokens()
    del config["train_on_real_tokens"]  # a model saved before the option: the default
    assert type(model).from_config(config).trains_on_real_tokens()
