"""The checkpoint names and layouts of each task model's head, in Google's and Hugging Face's formats."""

import pytest

from official_bert import BertEncoder
from official_bert.checkpoints import head_specs
from official_bert.models import BertClassifier, BertSpanLabeler, BertTokenClassifier


@pytest.mark.parametrize("build", [lambda e: BertClassifier(e, num_classes=9), lambda e: BertTokenClassifier(e, 9)])
def test_classifier_heads_are_named_as_bert_classifiers(tiny_config, build):
    kernel, bias = head_specs(build(BertEncoder(tiny_config)))
    assert (kernel.hf_name, kernel.stored_shape("hf")) == ("classifier.weight", (9, 32))
    assert (kernel.google_name, kernel.stored_shape("google")) == ("output_weights", (9, 32))
    assert (bias.hf_name, bias.google_name, bias.stored_shape("hf")) == ("classifier.bias", "output_bias", (9,))


def test_span_labeler_head_is_named_as_squad_models(tiny_config):
    kernel, bias = head_specs(BertSpanLabeler(BertEncoder(tiny_config)))
    assert (kernel.hf_name, kernel.stored_shape("hf")) == ("qa_outputs.weight", (2, 32))
    assert (kernel.google_name, kernel.stored_shape("google")) == ("cls/squad/output_weights", (2, 32))
    assert (bias.hf_name, bias.google_name, bias.stored_shape("google")) == ("qa_outputs.bias", "cls/squad/output_bias",
                                                                              (2,))


def test_a_model_without_a_named_head_is_an_error(tiny_config):
    with pytest.raises(TypeError, match="no checkpoint names for the head of a BertEncoder"):
        head_specs(BertEncoder(tiny_config))
