"""Each family's classification, token-classification, multiple-choice and question-answering heads drop at the rate
transformers' heads of the same `config.json` drop at: DistilBERT's sequence and multiple-choice heads at
`seq_classif_dropout` (0.2 by default), its token classifier at `dropout`, its question-answering head at `qa_dropout`
(0.1); ALBERT's at `classifier_dropout_prob`; BERT's and RoBERTa's at `classifier_dropout`, else (the default)
`hidden_dropout_prob` (RoBERTa's multiple-choice head always), and their question-answering heads not at all."""

import json

import pytest

from tests.tiny_families import FAMILIES

pytestmark = pytest.mark.slow  # transformers' PyTorch heads: torch's import, seconds, in a worker that has none yet

HEADS = {"classifier": "ForSequenceClassification", "tagger": "ForTokenClassification",
         "multiple_choice": "ForMultipleChoice"}


def _their_head_dropout(model):
    """The dropout rates of a transformers task model outside its encoder (its head's), as a set."""
    encoder_parts = ("embeddings", "encoder.", "transformer.", "layer.")
    return {module.p for name, module in model.named_modules()
            if type(module).__name__ == "Dropout" and not any(part in name for part in encoder_parts)}


def _our_head(kind, encoder):
    from official_bert import BertClassifier, BertMultipleChoice
    from official_bert.models.token_classifier import BertTokenClassifier

    if kind == "classifier":
        return BertClassifier(encoder, 2)
    if kind == "tagger":
        return BertTokenClassifier(encoder, 3)
    return BertMultipleChoice(encoder)


# Each family's config.json key of its classification heads' dropout.
HEAD_DROPOUT_KEYS = {"bert": "classifier_dropout", "roberta": "classifier_dropout", "distilbert": "seq_classif_dropout",
                     "albert": "classifier_dropout_prob"}


@pytest.mark.parametrize("head_dropout", [None, 0.3])  # left out of config.json (transformers' default), or given
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_head_drops_as_transformers_head_of_the_same_config_json(family, head_dropout, tmp_path):
    transformers = pytest.importorskip("transformers")
    import keras

    from official_bert import BertConfig, BertEncoder, BertSpanLabeler

    values = BertConfig(**FAMILIES[family], hidden_dropout_prob=0.15).to_hf_dict()
    for key in (*HEAD_DROPOUT_KEYS.values(), "qa_dropout"):
        values.pop(key, None)
    if head_dropout is not None:
        values[HEAD_DROPOUT_KEYS[family]] = head_dropout
    (tmp_path / "config.json").write_text(json.dumps(values))
    theirs = transformers.AutoConfig.from_pretrained(tmp_path)
    ours = BertConfig.from_json_file(str(tmp_path / "config.json"))
    encoder = BertEncoder(ours)
    for kind, head in HEADS.items():
        their_model = getattr(transformers, ours.family.hf_class_prefix + head)(theirs)
        [their_rate] = _their_head_dropout(their_model)
        assert _our_head(kind, encoder).get_layer("classifier_dropout").rate == pytest.approx(their_rate), kind
    their_model = getattr(transformers, ours.family.hf_class_prefix + "ForQuestionAnswering")(theirs)
    our_dropouts = [layer.rate for layer in BertSpanLabeler(encoder).layers if isinstance(layer, keras.layers.Dropout)]
    assert our_dropouts == sorted(_their_head_dropout(their_model))  # DistilBERT's qa_dropout; none elsewhere
    family_default = {"distilbert": 0.2, "albert": 0.1}.get(family, 0.15)  # BERT's and RoBERTa's: the hidden one
    assert ours.head_dropout_prob == (family_default if head_dropout is None else head_dropout)
    at_hidden = {"distilbert": "tagger", "roberta": "multiple_choice"}.get(family)  # transformers' exceptions
    for kind in HEADS:
        assert ours.task_head_dropout(kind) == (0.15 if kind == at_hidden else ours.head_dropout_prob), kind


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_config_json_we_write_makes_transformers_heads_drop_as_ours(family, tmp_path):
    """A config with its head dropouts set in Python: transformers' heads of its `to_hf_dict` (what `save_encoder`
    writes) drop as ours."""
    transformers = pytest.importorskip("transformers")
    import keras

    from official_bert import BertConfig, BertEncoder, BertSpanLabeler

    ours = BertConfig(**FAMILIES[family], hidden_dropout_prob=0.15, classifier_dropout_prob=0.3,
                      **({"qa_dropout_prob": 0.25} if family == "distilbert" else {}))
    (tmp_path / "config.json").write_text(json.dumps(ours.to_hf_dict()))
    theirs = transformers.AutoConfig.from_pretrained(tmp_path)
    encoder = BertEncoder(ours)
    for kind, head in HEADS.items():
        [their_rate] = _their_head_dropout(getattr(transformers, ours.family.hf_class_prefix + head)(theirs))
        assert _our_head(kind, encoder).get_layer("classifier_dropout").rate == pytest.approx(their_rate), kind
    their_span = getattr(transformers, ours.family.hf_class_prefix + "ForQuestionAnswering")(theirs)
    our_span = [layer.rate for layer in BertSpanLabeler(encoder).layers if isinstance(layer, keras.layers.Dropout)]
    assert our_span == sorted(_their_head_dropout(their_span)) == ([0.25] if family == "distilbert" else [])


def test_a_distilbert_config_built_in_python_drops_as_distilbert_config():
    """`BertConfig(model_type="distilbert")` takes transformers' `DistilBertConfig().seq_classif_dropout`, and its
    `config.json` gives it back to transformers."""
    transformers = pytest.importorskip("transformers")
    from official_bert import BertConfig

    ours = BertConfig(**FAMILIES["distilbert"])
    assert ours.classifier_dropout_prob == transformers.DistilBertConfig().seq_classif_dropout == 0.2
    assert ours.to_hf_dict()["seq_classif_dropout"] == 0.2
    assert BertConfig(**FAMILIES["distilbert"], classifier_dropout_prob=0.0).to_hf_dict()["seq_classif_dropout"] == 0
    assert ours.qa_dropout_prob == transformers.DistilBertConfig().qa_dropout == ours.to_hf_dict()["qa_dropout"] == 0.1
