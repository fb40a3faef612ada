"""`BertConfig.pruned_heads`: transformers' `PretrainedConfig.pruned_heads` (layer -> removed heads), normalised,
validated, and absent from `to_dict()` when empty."""

import json

import pytest

from official_bert import BertConfig

SMALL = dict(vocab_size=100, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64)


def test_empty_by_default_and_to_dict_unchanged():
    config = BertConfig(**SMALL)
    assert config.pruned_heads == {} and "pruned_heads" not in config.to_dict()
    assert "pruned_heads" not in BertConfig.from_dict({**SMALL, "pruned_heads": {}}).to_dict()
    assert "pruned_heads" not in BertConfig.from_dict({**SMALL, "pruned_heads": {"1": []}}).to_dict()
    assert [config.num_kept_heads(i) for i in range(3)] == [4, 4, 4]


def test_json_keys_are_read_as_ints_and_heads_sorted(tmp_path):
    config = BertConfig.from_dict({**SMALL, "pruned_heads": {"2": [3, 0], "0": [1]}})
    assert config.pruned_heads == {0: [1], 2: [0, 3]}
    assert config.kept_heads(2) == [1, 2] and config.num_kept_heads(0) == 3 and config.num_kept_heads(1) == 4
    assert config.to_dict()["pruned_heads"] == {"0": [1], "2": [0, 3]}
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(config.to_dict()))
    assert BertConfig.from_json_file(str(path)) == config
    assert BertConfig(**SMALL, pruned_heads={"2": [3, 0], "0": [1]}) == config
    hf = config.to_hf_dict()
    assert hf["pruned_heads"] == {"0": [1], "2": [0, 3]} and hf["architectures"] == ["BertModel"]


def test_distilbert_hf_dict_holds_pruned_heads():
    config = BertConfig(**{**SMALL, "type_vocab_size": 0}, model_type="distilbert", pruned_heads={1: [2]})
    assert config.to_hf_dict()["pruned_heads"] == {"1": [2]}
    assert BertConfig.from_dict(config.to_hf_dict()).pruned_heads == {1: [2]}


@pytest.mark.parametrize("pruned, message", [
    ({3: [0]}, "names layer 3"),
    ({0: [4]}, r"head indices in 0..3"),
    ({0: [-1]}, r"head indices in 0..3"),
    ({0: [1, 1]}, "names a head twice"),
    ({0: [0, 1, 2, 3]}, "every head of layer 0"),
    ({"x": [0]}, "expected a layer index"),
    ({0: "1"}, "expected head indices"),
    ([0, 1], "must be a dict"),
])
def test_bad_pruned_heads_are_refused(pruned, message):
    with pytest.raises(ValueError, match=message):
        BertConfig.from_dict({**SMALL, "pruned_heads": pruned}, source="cfg.json")


def test_albert_refuses_pruned_heads():
    with pytest.raises(ValueError, match="share blocks"):
        BertConfig(**SMALL, model_type="albert", pruned_heads={0: [1]})
