"""Fixtures shared by the text tests: one tokenizer per session (building its tables takes ~1 s)."""

import pytest


@pytest.fixture(scope="session")
def vocab_file(shared_data):
    return str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")


@pytest.fixture(scope="session")
def tokenizer_json(minilm_dir):
    return minilm_dir / "tokenizer.json"


@pytest.fixture(scope="session")
def tokenizer(vocab_file):
    from official_bert.text import BertTokenizer

    return BertTokenizer(vocab_file=vocab_file)
