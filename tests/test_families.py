"""The family specs (`official_bert.families`): the built-in families answer as before, and a new family is one spec
registered from outside the library, read from its `config.json`, built, run, saved and loaded by its weight names."""

import dataclasses
import json

import numpy as np
import pytest

from official_bert import BertConfig
from official_bert.families import (ALBERT, BERT, DISTILBERT, ROBERTA, check_sequence_length, family_of,
                                    model_types, register_family, unregister_family)
from tests.tiny_families import FAMILIES

# A BERT variant of its own: transformers-style classes `MyBertModel`, `MyBertForSequenceClassification`, whose
# encoder sits under `mybert.` in a task model's checkpoint.
MY_BERT = dataclasses.replace(BERT, model_type="my-bert", display_name="MyBERT", hf_class_prefix="MyBert",
                              hf_base_prefix="mybert.")
TINY = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
        "max_position_embeddings": 24}


@pytest.fixture
def my_bert():
    register_family(MY_BERT)
    yield MY_BERT
    unregister_family(MY_BERT.model_type)


def test_the_built_in_families_answer_as_their_checkpoints_need():
    assert model_types() == ("bert", "roberta", "xlm-roberta", "distilbert", "albert")
    roberta = BertConfig(**FAMILIES["roberta"])
    assert roberta.family is ROBERTA and roberta.max_sequence_length == 44 - 2 and roberta.packing_layout == "roberta"
    assert roberta.tokenizer_kind == "bpe" and ROBERTA.hf_architecture("ForPreTraining") == "RobertaForMaskedLM"
    assert family_of("xlm-roberta").hf_architecture() == "XLMRobertaModel"
    assert not DISTILBERT.has_pooler and not DISTILBERT.has_token_types and DISTILBERT.hf_base_prefix == "distilbert."
    assert ALBERT.shared_layers and ALBERT.tokenizer_kind == "sentencepiece" and ALBERT.default_activation == "gelu_new"
    with pytest.raises(ValueError, match=r"model_type 'gpt2' is not supported \(supported: bert, roberta, "
                                         r"xlm-roberta, distilbert, albert\)"):
        family_of("gpt2")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_familys_hugging_face_config_reads_back_as_the_same_config(name):
    config = BertConfig(**FAMILIES[name])
    hf = config.to_hf_dict()
    assert hf["model_type"] == config.model_type and hf["architectures"] == [config.family.hf_architecture()]
    assert BertConfig.from_dict(hf) == config
    if name == "distilbert":  # its own key names
        assert hf["dim"] == 32 and "hidden_size" not in hf and "type_vocab_size" not in hf


def test_the_sequence_length_check_counts_the_positions_a_family_skips():
    roberta = BertConfig(**{**FAMILIES["roberta"], "max_position_embeddings": 514})
    check_sequence_length(512, roberta)
    for seq_length in (2, 513, 514):
        with pytest.raises(ValueError, match=rf"out: --max_seq_length={seq_length} must be between 3 and the model's "
                                             r"max_position_embeddings=514 less RoBERTa's 2 padding positions$"):
            check_sequence_length(seq_length, roberta, "--max_seq_length", source="out")
    check_sequence_length(40, BertConfig(**FAMILIES["bert"]))
    with pytest.raises(ValueError, match=r"^seq_length=41 must be between 3 and the model's "
                                         r"max_position_embeddings=40$"):
        check_sequence_length(41, BertConfig(**FAMILIES["bert"]), "seq_length")


def test_a_new_family_is_one_spec(my_bert, tmp_path):
    from official_bert import BertEncoder
    from official_bert.checkpoints import head_specs, load_encoder, load_task_weights, save_encoder
    from official_bert.checkpoints.loading import write_hf_directory
    from official_bert.checkpoints.weight_map import encoder_specs
    from official_bert.hf_config import read_hf_config
    from official_bert.models import BertClassifier
    from official_bert.text.preprocessing import load_tokenizer

    (tmp_path / "config.json").write_text(json.dumps({**TINY, "model_type": "my-bert"}))
    config = BertConfig.from_json_file(str(tmp_path / "config.json"))
    assert config.family is my_bert and config.packing_layout == "bert" and config.tokenizer_kind == "wordpiece"
    assert config.max_sequence_length == 24 and config.has_pooler

    encoder = BertEncoder(config)
    ids = np.array([[2, 5, 6, 3, 0, 0]], "int32")
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"), "input_type_ids": np.zeros_like(ids)}
    outputs = encoder(inputs)
    assert outputs["sequence_output"].shape == (1, 6, 16) and outputs["pooled_output"].shape == (1, 16)

    saved = tmp_path / "saved"  # its base model, as transformers would write `MyBertModel`
    save_encoder(encoder, saved)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"t{i}" for i in range(5, 40)]
    (saved / "vocab.txt").write_text("".join(f"{token}\n" for token in tokens))
    written = json.loads((saved / "config.json").read_text())
    assert written["architectures"] == ["MyBertModel"] and written["model_type"] == "my-bert"
    del written["model_type"]  # the class name tells the family
    (saved / "config.json").write_text(json.dumps(written))
    assert read_hf_config(saved / "config.json").family is my_bert
    loaded, _ = load_encoder(str(saved))
    np.testing.assert_allclose(loaded(inputs)["sequence_output"], outputs["sequence_output"], atol=1e-6)
    tokenizer, layout = load_tokenizer(str(saved))
    assert layout == "bert" and tokenizer.get_special_tokens_dict()["start_of_sequence_id"] == 2

    # a task model's checkpoint: the encoder under the spec's `mybert.`, the head as BERT's
    classifier = BertClassifier(encoder, num_classes=3)
    tensors = {f"mybert.{spec.hf_name}": spec.to_stored_value("hf") for spec in encoder_specs(encoder)}
    assert "mybert.encoder.layer.1.attention.self.query.weight" in tensors
    tensors.update({spec.hf_name: spec.to_stored_value("hf") for spec in head_specs(classifier)})
    write_hf_directory(tmp_path / "task", tensors, {**config.to_hf_dict(), "architectures": ["MyBertForSequence"]})
    fresh = BertClassifier(BertEncoder(config), num_classes=3)
    assert load_task_weights(fresh.encoder, head_specs(fresh), str(tmp_path / "task"))
    np.testing.assert_allclose(fresh(inputs, training=False), classifier(inputs, training=False), atol=1e-6)


def test_an_unregistered_family_is_refused_naming_those_there_are(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "model_type": "my-bert"}))
    with pytest.raises(ValueError, match=r"field 'model_type' is 'my-bert': a checkpoint of that family is not "
                                         r"supported \(supported: bert, roberta, xlm-roberta, distilbert, albert\)"):
        BertConfig.from_json_file(str(tmp_path / "config.json"))
