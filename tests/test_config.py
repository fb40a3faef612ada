"""BertConfig: defaults, file formats, validation, presets."""

import json

import pytest

import configs
from official_bert import BertConfig


def test_defaults_are_bert_base():
    config = BertConfig()
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (12, 768, 12)
    assert (config.intermediate_size, config.vocab_size, config.layer_norm_eps) == (3072, 30522, 1e-12)
    assert config.hidden_act == "gelu"


def test_reads_google_bert_config(shared_data):
    config = BertConfig.from_json_file(shared_data / "bert-configs" / "uncased_L-12_H-768_A-12.bert_config.json")
    assert config == BertConfig()


def test_reads_hugging_face_config(minilm_dir):
    config = BertConfig.from_json_file(minilm_dir / "config.json")
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
    assert config.intermediate_size == 1536 and config.layer_norm_eps == 1e-12


@pytest.mark.parametrize("field,value,match", [
    ("hidden_size", 100, "hidden_size.*divisible.*num_attention_heads"),
    ("num_hidden_layers", 0, "num_hidden_layers.*positive"),
    ("vocab_size", -3, "vocab_size.*positive"),
    ("intermediate_size", 1.5, "intermediate_size.*positive integer"),
    ("hidden_act", "gelu_exact", "hidden_act.*expected one of"),
    ("hidden_dropout_prob", 1.0, "hidden_dropout_prob"),
    ("layer_norm_eps", 0.0, "layer_norm_eps"),
    ("max_position_embeddings", "512", "max_position_embeddings"),
])
def test_invalid_field_is_named(field, value, match):
    with pytest.raises(ValueError, match=match):
        BertConfig(**{field: value})


def test_invalid_file_names_the_file_and_field(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({"hidden_size": 768, "num_attention_heads": 7}))
    with pytest.raises(ValueError, match=f"{path}.*hidden_size"):
        BertConfig.from_json_file(path)


@pytest.mark.parametrize("values,match", [
    ({"model_type": "gpt2"}, "model_type.*'gpt2'.*not supported"),
    ({"model_type": "electra"}, "model_type.*'electra'.*not supported"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
])
def test_non_bert_hugging_face_configs_are_rejected(tmp_path, values, match):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError, match=match):
        BertConfig.from_json_file(path)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        BertConfig.from_json_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json.*not valid JSON"):
        BertConfig.from_json_file(bad)


def test_presets_cover_base_large_and_the_24_small_berts():
    names = configs.list_presets()
    assert BertConfig.from_preset("bert_large_uncased").hidden_size == 1024
    small = [n for n in names if n.startswith("uncased_L-")]
    assert len(small) == 24
    for layers in (2, 4, 6, 8, 10, 12):
        for hidden in (128, 256, 512, 768):
            config = BertConfig.from_preset(f"uncased_L-{layers}_H-{hidden}_A-{hidden // 64}")
            assert (config.num_hidden_layers, config.hidden_size) == (layers, hidden)
            assert config.num_attention_heads == hidden // 64 and config.intermediate_size == 4 * hidden
    with pytest.raises(ValueError, match="Unknown BERT preset 'bert_huge'.*bert_base_uncased"):
        BertConfig.from_preset("bert_huge")


def test_hf_dict_round_trip():
    config = BertConfig(hidden_size=256, num_attention_heads=4, num_hidden_layers=4, intermediate_size=1024)
    assert BertConfig.from_dict(config.to_hf_dict()) == config


@pytest.mark.parametrize("model_type", ["bert", "roberta", "xlm-roberta", "distilbert", "albert"])
def test_a_config_json_without_a_key_takes_the_familys_transformers_default(model_type):
    """A RoBERTa config.json without pad_token_id is read with transformers' 1 (not BERT's 0: its position ids would
    shift); every field a family's transformers config class has defaults as there."""
    import dataclasses

    from official_bert.families import family_of

    transformers = pytest.importorskip("transformers")
    theirs = transformers.AutoConfig.for_model(model_type)
    ours = BertConfig.from_dict({"model_type": model_type})
    family = family_of(model_type)
    their_names = {ours_name: their_name for their_name, ours_name in family.hf_key_renames.items()}
    compared = []
    for field in dataclasses.fields(BertConfig):
        name = their_names.get(field.name, field.name)
        if field.name in family.hf_fixed_values or not hasattr(theirs, name):
            continue
        assert getattr(ours, field.name) == getattr(theirs, name), (model_type, field.name)
        compared.append(field.name)
    assert {"pad_token_id", "vocab_size", "num_hidden_layers", "hidden_size"} <= set(compared)
    assert ours.pad_token_id == (1 if "roberta" in model_type else 0)


@pytest.mark.parametrize("model_type", ["bert", "roberta", "xlm-roberta", "distilbert", "albert"])
def test_a_config_built_in_python_takes_the_familys_padding_id_unless_given(model_type):
    """`BertConfig(model_type="roberta", ...)` pads with transformers' `RobertaConfig(...)` id (1), so its position ids
    start where transformers' do; an explicit pad id, 0 included, is kept."""
    transformers = pytest.importorskip("transformers")
    sizes = dict(vocab_size=100, hidden_size=16, num_attention_heads=2, num_hidden_layers=1, intermediate_size=32,
                 type_vocab_size=0 if model_type == "distilbert" else 1)
    theirs = transformers.AutoConfig.for_model(model_type)
    ours = BertConfig(model_type=model_type, **sizes)
    assert ours.pad_token_id == theirs.pad_token_id
    assert ours.max_sequence_length == 512 - (theirs.pad_token_id + 1 if "roberta" in model_type else 0)
    assert BertConfig(model_type=model_type, pad_token_id=0, **sizes).pad_token_id == 0
    assert BertConfig(model_type=model_type, pad_token_id=3, **sizes).pad_token_id == 3
    with pytest.raises(ValueError, match="field 'pad_token_id' must be an integer >= 0, got -1"):
        BertConfig(model_type=model_type, pad_token_id=-1, **sizes)
    assert BertConfig.from_dict(ours.to_hf_dict()) == ours


def test_an_unknown_family_is_named_before_its_padding_id_is_checked():
    with pytest.raises(ValueError, match="field 'model_type' is 'gpt2'; supported: bert, roberta"):
        BertConfig(model_type="gpt2")
