"""BertConfig for ALBERT: transformers' AlbertConfig and Google's albert_config.json in, round trips, validation."""

import json

import pytest

from official_bert import BertConfig

# google-research/albert config/base/albert_config.json (albert_base v2's): no model_type; its "gelu" is the tanh form.
GOOGLE_ALBERT_BASE = {"attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
                      "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
                      "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
                      "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
                      "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000}
FIELDS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
          "num_attention_heads", "intermediate_size", "inner_group_num", "hidden_act", "hidden_dropout_prob",
          "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size", "initializer_range",
          "layer_norm_eps", "pad_token_id", "classifier_dropout_prob")


def test_bert_configs_hold_no_albert_fields():
    values = BertConfig().to_dict()
    assert not {"embedding_size", "num_hidden_groups", "inner_group_num", "classifier_dropout_prob",
                "model_type"} & set(values)
    assert BertConfig.from_dict(values) == BertConfig()
    assert BertConfig().embedding_width == 768


def test_reads_google_albert_config(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(GOOGLE_ALBERT_BASE))
    config = BertConfig.from_json_file(path)
    assert config.model_type == "albert" and config.hidden_act == "gelu_new"
    assert (config.embedding_size, config.hidden_size, config.num_hidden_groups) == (128, 768, 1)
    assert config.hidden_dropout_prob == 0.0
    assert config.classifier_dropout_prob == config.head_dropout_prob == 0.1  # transformers' default, as Google's


def test_transformers_albert_config_round_trips():
    transformers = pytest.importorskip("transformers")
    theirs = transformers.AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=32, num_hidden_layers=6,
                                       num_hidden_groups=3, inner_group_num=2, num_attention_heads=4,
                                       intermediate_size=37, max_position_embeddings=20, layer_norm_eps=1e-6)
    ours = BertConfig.from_dict(theirs.to_dict())
    assert {f: getattr(ours, f) for f in FIELDS} == {f: getattr(theirs, f) for f in FIELDS}
    assert BertConfig.from_dict(ours.to_dict()) == ours
    assert BertConfig.from_dict(ours.to_hf_dict()) == ours
    again = transformers.AlbertConfig(**ours.to_hf_dict())
    assert {f: getattr(again, f) for f in FIELDS} == {f: getattr(theirs, f) for f in FIELDS}
    assert ours.to_hf_dict()["architectures"] == ["AlbertModel"]
    # layer i runs group int(i / (L / G)), as transformers' AlbertTransformer
    assert [ours.layer_group(i) for i in range(6)] == [0, 0, 1, 1, 2, 2]


def test_missing_keys_take_transformers_albert_defaults():
    transformers = pytest.importorskip("transformers")
    ours, theirs = BertConfig.from_dict({"model_type": "albert"}), transformers.AlbertConfig()
    assert {f: getattr(ours, f) for f in FIELDS} == {f: getattr(theirs, f) for f in FIELDS}


def test_direct_albert_config_without_embedding_size_uses_the_hidden_size():
    config = BertConfig(model_type="albert", hidden_size=32, num_attention_heads=4)
    assert config.embedding_size == config.embedding_width == 32


@pytest.mark.parametrize("values,match", [
    ({"model_type": "albert", "num_hidden_layers": 4, "num_hidden_groups": 3},
     r"'num_hidden_layers' \(4\) must be divisible by 'num_hidden_groups' \(3\)"),
    ({"model_type": "albert", "inner_group_num": 0}, "'inner_group_num' must be a positive integer"),
    ({"model_type": "albert", "num_hidden_groups": 0}, "'num_hidden_groups' must be a positive integer"),
    ({"model_type": "albert", "embedding_size": -1}, "'embedding_size' must be a positive integer"),
    ({"model_type": "bert", "embedding_size": 128},
     r"'embedding_size' is 128; a bert encoder needs None \(only albert encoders have it\)"),
    ({"model_type": "roberta", "pad_token_id": 1, "type_vocab_size": 1, "num_hidden_groups": 2},
     "'num_hidden_groups' is 2; a roberta encoder needs 1"),
    ({"inner_group_num": 2, "model_type": "distilbert"}, "'inner_group_num' is 2; a distilbert encoder needs 1"),
    ({"model_type": "roberta", "pad_token_id": 1, "type_vocab_size": 1, "qa_dropout_prob": 0.1},
     r"'qa_dropout_prob' is 0.1; a roberta encoder needs None \(only distilbert encoders have it\)"),
    ({"model_type": "albert", "classifier_dropout_prob": 1.0}, r"'classifier_dropout_prob' must be in \[0, 1\)"),
])
def test_invalid_family_fields_are_named(tmp_path, values, match):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError, match=f"{path}.*{match}"):
        BertConfig.from_json_file(path)
