"""A Hugging Face `config.json` without `model_type`: its family from its keys or the tokenizer files beside it, or an
error that says `model_type` is missing (never BERT by default)."""

import json
import logging

import pytest

from official_bert.hf_config import infer_model_type, read_hf_config

# A RoBERTa byte-level BPE vocab (ids 0..31), no merges.
BPE_VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, **{chr(c): 5 + i for i, c in enumerate(
    range(ord("a"), ord("z") + 1))}, "Ġ": 31}
TINY = {"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
        "max_position_embeddings": 40}
ROBERTA_KEYS = {"pad_token_id": 1, "type_vocab_size": 1, "layer_norm_eps": 1e-5}


def _write_bpe_files(directory):
    (directory / "vocab.json").write_text(json.dumps(BPE_VOCAB), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")


def _roberta_directory_without_model_type(path):
    """A tiny `RobertaModel` directory whose `config.json` has neither `model_type` nor `architectures`."""
    from official_bert import BertConfig, BertEncoder
    from official_bert.checkpoints import save_encoder

    config = BertConfig(**TINY, **ROBERTA_KEYS, model_type="roberta")
    save_encoder(BertEncoder(config), path)
    _write_bpe_files(path)
    values = json.loads((path / "config.json").read_text())
    del values["model_type"], values["architectures"]
    (path / "config.json").write_text(json.dumps(values))
    return path


def test_a_roberta_directory_without_model_type_loads_as_roberta_with_its_bpe(tmp_path, caplog):
    import tensorflow as tf

    from official_bert.checkpoints import load_encoder
    from official_bert.text.preprocessing import load_preprocessor

    directory = _roberta_directory_without_model_type(tmp_path / "roberta")
    with caplog.at_level(logging.INFO):
        encoder, config = load_encoder(directory)
    assert config.model_type == "roberta" and config.is_roberta
    assert "no 'model_type'; read as roberta (the vocab.json + merges.txt beside it)" in caplog.text
    preprocessor = load_preprocessor(directory, 8)  # was: "no vocab.txt or tokenizer.json; pass --vocab_file"
    assert preprocessor.layout == "roberta"
    ids = preprocessor(tf.constant(["cab"]))["input_word_ids"].numpy()[0]
    assert ids[0] == 0 and ids[-1] == 1  # <s> ... </s> then RoBERTa's <pad> (1)
    assert encoder(preprocessor(tf.constant(["cab"])))["sequence_output"].shape == (1, 8, 16)


@pytest.mark.parametrize("files, family", [
    (("vocab.json", "merges.txt"), "roberta"),
    (("spiece.model",), "albert"),
    (("30k-clean.model",), "albert"),
    (("sentencepiece.bpe.model",), "xlm-roberta"),
    (("vocab.txt",), "bert"),
    (("vocab.txt", "tokenizer_config.json", "merges.txt"), "bert"),  # merges.txt alone is no BPE vocab
])
def test_the_tokenizer_files_tell_the_family(tmp_path, files, family):
    for name in files:
        (tmp_path / name).write_text("")
    assert infer_model_type(TINY, tmp_path)[0] == family


def test_a_wordpiece_or_bpe_tokenizer_json_tells_the_family(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {}}}))
    assert infer_model_type(TINY, tmp_path)[0] == "bert"
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    assert infer_model_type(TINY, tmp_path)[0] == "roberta"


def test_the_config_keys_come_before_the_files(tmp_path):
    (tmp_path / "spiece.model").write_text("")
    assert infer_model_type({**TINY, "architectures": ["BertForMaskedLM"]}, tmp_path)[0] == "bert"
    assert infer_model_type({**TINY, "architectures": ["XLMRobertaModel"]}, tmp_path)[0] == "xlm-roberta"
    assert infer_model_type({"dim": 16, "n_layers": 1, "n_heads": 2}, tmp_path)[0] == "distilbert"
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "num_hidden_groups": 1, "embedding_size": 8}))
    assert read_hf_config(tmp_path / "config.json").model_type == "albert"  # Google's ALBERT keys, as before


def test_without_model_type_and_no_telling_files_the_error_says_so(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    with pytest.raises(ValueError, match=r"config.json: field 'model_type' is missing and no tokenizer file beside it "
                                         r"tells the family \(vocab.json, merges.txt, .*\); add \"model_type\""):
        read_hf_config(tmp_path / "config.json")
    (tmp_path / "vocab.txt").write_text("")
    _write_bpe_files(tmp_path)
    with pytest.raises(ValueError, match=r"'model_type' is missing and its tokenizer files belong to different "
                                         r"families \(vocab.json, merges.txt, vocab.txt\)"):
        read_hf_config(tmp_path / "config.json")


def test_a_config_with_model_type_is_read_as_it_says(tmp_path):
    _write_bpe_files(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "model_type": "bert"}))
    assert read_hf_config(tmp_path / "config.json").model_type == "bert"
