"""TaskModel.compile: "auto" gives the model's own loss; a loss that would read its logits as probabilities is
refused."""

import keras
import pytest

from official_bert import BertClassifier, BertEncoder, BertSpanLabeler

PROBABILITY_LOSSES = ["sparse_categorical_crossentropy", "bce", keras.losses.categorical_crossentropy,
                      keras.losses.SparseCategoricalCrossentropy(), keras.losses.BinaryFocalCrossentropy()]


@pytest.mark.parametrize("loss", PROBABILITY_LOSSES, ids=["name", "alias", "function", "Loss", "focal_Loss"])
def test_a_cross_entropy_over_probabilities_is_refused_in_one_line(tiny_config, loss):
    model = BertClassifier(BertEncoder(tiny_config), num_classes=3)
    with pytest.raises(ValueError, match=r"^BertClassifier outputs logits, but the loss '\w+' reads probabilities "
                                         r"\(from_logits=False\): pass its from_logits=True form") as error:
        model.compile(optimizer="adam", loss=loss)
    assert "\n" not in str(error.value)


def test_logit_losses_and_the_models_own_are_taken(tiny_config):
    model = BertClassifier(BertEncoder(tiny_config), num_classes=3)
    for loss in (keras.losses.SparseCategoricalCrossentropy(from_logits=True), "mse"):
        model.compile(optimizer="adam", loss=loss)
        assert model.loss is loss
    model.compile(optimizer="adam")  # "auto": the model's own
    assert model.loss.get_config()["from_logits"] is True
    spans = BertSpanLabeler(BertEncoder(tiny_config))
    spans.compile(optimizer="adam")  # its own: a from_logits=True cross-entropy for each of its two outputs
    own = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with pytest.raises(ValueError, match="BertSpanLabeler outputs logits, but the loss 'sparse_categorical_"):
        spans.compile(optimizer="adam", loss={"start_logits": own, "end_logits": "sparse_categorical_crossentropy"})
