"""find_family_vocab / read_vocab_file / tokenizer_of: one way to find, size-check and tokenize with each family's
tokenizer files (WordPiece vocab.txt, RoBERTa's vocab.json + merges.txt, ALBERT's spiece.model)."""

import json
import logging
import shutil

import pytest

from official_bert.text import BertTokenizer, BytePairTokenizer
from official_bert.text.preprocessing import (BpeVocab, SentencepieceVocab, find_family_vocab, read_vocab_file,
                                              resolve_casing, tokenizer_of, write_tokenizer_files)
from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

BPE_VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, **{chr(c): 5 + i for i, c in enumerate(
    range(ord("a"), ord("z") + 1))}, "Ġ": 31}


@pytest.fixture
def wordpiece_dir(shared_data, tmp_path):
    directory = tmp_path / "bert-base-uncased"
    directory.mkdir()
    shutil.copyfile(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt", directory / "vocab.txt")
    return directory


@pytest.fixture
def bpe_dir(tmp_path):
    directory = tmp_path / "roberta"
    directory.mkdir()
    (directory / "vocab.json").write_text(json.dumps(BPE_VOCAB), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return directory


@pytest.fixture
def albert_dir(shared_data, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    directory = tmp_path / "albert"
    directory.mkdir()
    lines = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").splitlines()[1:500]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(field for line in lines for field in line.split("\t")[3:5]),
        model_prefix=str(directory / "spiece"), vocab_size=200, model_type="unigram", pad_id=0, unk_id=1, bos_id=-1,
        eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"], num_threads=2, minloglevel=2)
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    return directory


def test_each_family_finds_its_files_casing_and_tokenizer(wordpiece_dir, bpe_dir, albert_dir):
    tokens, lower, source = find_family_vocab(wordpiece_dir, "bert", vocab_size=30522)
    assert len(tokens) == 30522 and lower is True and source.endswith("vocab.txt")  # "uncased" in the name
    assert isinstance(tokenizer_of(tokens, lower), BertTokenizer)

    vocab, lower, source = find_family_vocab(bpe_dir, "roberta", vocab_size=32)
    assert isinstance(vocab, BpeVocab) and lower is False and source.endswith("vocab.json")
    assert isinstance(tokenizer_of(vocab, lower), BytePairTokenizer)

    vocab, lower, source = find_family_vocab(albert_dir, "albert", vocab_size=200)
    assert isinstance(vocab, SentencepieceVocab) and lower is False  # tokenizer_config.json's do_lower_case
    tokenizer = tokenizer_of(vocab, lower)
    assert isinstance(tokenizer, SentencepieceTokenizer) and not tokenizer.lower_case


def test_google_albert_releases_name_their_sentencepiece_model_30k_clean(albert_dir, tmp_path):
    (albert_dir / "spiece.model").rename(albert_dir / "30k-clean.model")
    vocab, _, source = find_family_vocab(albert_dir, "albert", vocab_size=200)
    assert source.endswith("30k-clean.model") and len(vocab) == 200
    assert write_tokenizer_files(vocab, tmp_path) == str(tmp_path / "spiece.model")  # a model_dir keeps the HF name


def test_a_vocab_larger_than_the_model_or_missing_files_are_named(wordpiece_dir, bpe_dir, albert_dir):
    with pytest.raises(ValueError, match=r"vocab.txt: 30522 tokens, but the model's config has vocab_size=100: ids "
                                         r"100..30521 have no embedding row"):
        find_family_vocab(wordpiece_dir, "bert", vocab_size=100)
    with pytest.raises(ValueError, match=r"vocab.json: 32 tokens, but the model's config has vocab_size=31"):
        find_family_vocab(bpe_dir, "roberta", vocab_size=31)
    with pytest.raises(ValueError, match=r"spiece.model: 200 tokens, but the model's config has vocab_size=199"):
        find_family_vocab(albert_dir, "albert", vocab_size=199)
    (bpe_dir / "merges.txt").unlink()
    with pytest.raises(FileNotFoundError, match="missing merges.txt"):
        find_family_vocab(bpe_dir, "roberta")
    with pytest.raises(FileNotFoundError, match=r"missing spiece.model \(or 30k-clean.model"):
        find_family_vocab(wordpiece_dir, "albert")
    with pytest.raises(ValueError, match="XLM-RoBERTa"):
        find_family_vocab(bpe_dir, "xlm-roberta")


def test_a_vocab_smaller_than_the_embedding_table_is_accepted_and_logged_once(wordpiece_dir, bpe_dir, albert_dir,
                                                                                 caplog):
    """A padded table (rows rounded up, e.g. to a multiple of 8; transformers loads it): every id has its row."""
    with caplog.at_level(logging.INFO, logger="official_bert.text.preprocessing"):
        for _ in range(2):
            tokens, _, source = find_family_vocab(wordpiece_dir, "bert", vocab_size=30528)
        assert len(tokens) == 30522
        assert isinstance(find_family_vocab(bpe_dir, "roberta", vocab_size=50265)[0], BpeVocab)
        assert isinstance(find_family_vocab(albert_dir, "albert", vocab_size=30000)[0], SentencepieceVocab)
    padded = [r.getMessage() for r in caplog.records if "padded table" in r.getMessage()]
    assert padded[0] == (f"{source}: 30522 tokens for the model's 30528 embedding rows (config vocab_size): a padded "
                         "table, whose last 6 rows no token uses")
    assert len(padded) == 3  # once per vocab and table, however often it is checked


def test_read_vocab_file_knows_each_kind(wordpiece_dir, bpe_dir, albert_dir):
    assert len(read_vocab_file(wordpiece_dir / "vocab.txt")) == 30522
    assert isinstance(read_vocab_file(bpe_dir / "vocab.json"), BpeVocab)
    assert isinstance(read_vocab_file(albert_dir / "spiece.model"), SentencepieceVocab)


def test_unknown_casing_lower_cases_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert resolve_casing(None, "some/vocab.txt", " (pass --do_lower_case=false)") is True
    assert "Casing of some/vocab.txt unknown; lower-casing (pass --do_lower_case=false)" in caplog.text
    assert resolve_casing(False, "x") is False
