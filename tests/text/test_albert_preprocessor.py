"""load_preprocessor on an ALBERT directory: the in-graph SentencePiece preprocessor, packing pairs as transformers'
AlbertTokenizerFast does (`[CLS] A [SEP] B [SEP]`, type ids 0 then 1, `<pad>` padding, longest-first truncation).

The spiece.model is trained here with the `sentencepiece` package on shared text (no ALBERT model is reachable), with
ALBERT's options, beside a transformers `config.json` of model_type "albert".
"""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.text import load_preprocessor
from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer
import text_corpora as corpora

SEQ_LENGTH = 20


@pytest.fixture(scope="module")
def albert_dir(shared_data, tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")
    transformers = pytest.importorskip("transformers")
    path = tmp_path_factory.mktemp("albert_preprocessor")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpora.sst2(shared_data)[:3000]), model_prefix=str(path / "spiece"), vocab_size=400,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"], num_threads=2, minloglevel=2)
    transformers.AlbertConfig(vocab_size=400, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=16).to_json_file(str(path / "config.json"))
    return path


@pytest.mark.slow
def test_albert_directory_gets_the_sentencepiece_preprocessor(albert_dir, shared_data):
    transformers = pytest.importorskip("transformers")
    preprocessor = load_preprocessor(albert_dir, SEQ_LENGTH)
    assert isinstance(preprocessor.tokenizer, SentencepieceTokenizer) and preprocessor.layout == "bert"
    pairs = corpora.mrpc_pairs(shared_data, "dev")[:100] + [("", ""), ("a", ""), ("x " * 30, "y")]
    first, second = ([p[i] for p in pairs] for i in (0, 1))
    ours = preprocessor([tf.constant(first), tf.constant(second)])
    reference = transformers.AlbertTokenizerFast.from_pretrained(str(albert_dir))
    expected = reference(first, second, truncation="longest_first", max_length=SEQ_LENGTH, padding="max_length",
                         return_token_type_ids=True)
    np.testing.assert_array_equal(ours["input_word_ids"].numpy(), expected["input_ids"])
    np.testing.assert_array_equal(ours["input_type_ids"].numpy(), expected["token_type_ids"])
    np.testing.assert_array_equal(ours["input_mask"].numpy(), expected["attention_mask"])
    single = preprocessor(tf.constant(first))
    expected = reference(first, truncation=True, max_length=SEQ_LENGTH, padding="max_length")
    np.testing.assert_array_equal(single["input_word_ids"].numpy(), expected["input_ids"])


def test_albert_directory_without_spiece_model_is_named(albert_dir, tmp_path):
    (tmp_path / "config.json").write_bytes((albert_dir / "config.json").read_bytes())
    with pytest.raises(FileNotFoundError, match="needs its SentencePiece model; missing spiece.model"):
        load_preprocessor(tmp_path, SEQ_LENGTH)


@pytest.mark.slow
def test_spiece_model_file_helpers(albert_dir, tmp_path):
    from official_bert.text.preprocessing import (SentencepieceVocab, text_preprocessor, tokenizer_from_files,
                                                  write_tokenizer_files)

    vocab = SentencepieceVocab.find(albert_dir)
    assert len(vocab) == 400
    model_file = write_tokenizer_files(vocab, str(tmp_path))
    assert model_file == str(tmp_path / "spiece.model")
    assert isinstance(tokenizer_from_files(model_file, True), SentencepieceTokenizer)
    texts = tf.constant(["A short (test) sentence.", "Another one"])
    ours = text_preprocessor(model_file, True, SEQ_LENGTH).pack([texts])[0]
    expected = load_preprocessor(albert_dir, SEQ_LENGTH)(texts)
    for name, value in expected.items():
        np.testing.assert_array_equal(ours[name].numpy(), value.numpy())
    with pytest.raises(FileNotFoundError, match="missing spiece.model"):
        SentencepieceVocab.find(tmp_path / "empty")
