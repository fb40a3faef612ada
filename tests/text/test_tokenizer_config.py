"""A Preprocessor's config carries its vocabulary (a saved `.keras` model needs no tokenizer file), and
`write_tokenizer_files_of` writes files that tokenize the same, for WordPiece, byte-level BPE and SentencePiece."""

import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.text.preprocessing import Preprocessor, text_preprocessor
from official_bert.text.tokenizer_config import write_tokenizer_files_of
import text_corpora as corpora

pytestmark = pytest.mark.slow  # builds three tokenizers and trains a SentencePiece model
TEXTS = ["The cat sat on the mat.", "naïve café", "", "x " * 40]


@pytest.fixture(scope="module")
def vocab_files(vocab_file, shared_data, tmp_path_factory):
    """kind -> the vocab file a `text_preprocessor` reads: vocab.txt, vocab.json (+ merges.txt), spiece.model."""
    from tests.tiny_families import roberta_directory

    spm = pytest.importorskip("sentencepiece")
    albert = tmp_path_factory.mktemp("spiece")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpora.sst2(shared_data)[:500]), model_prefix=str(albert / "spiece"), vocab_size=120,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        num_threads=1, minloglevel=2)
    roberta = roberta_directory(tmp_path_factory.mktemp("bpe"), 40)
    return {"wordpiece": str(vocab_file), "bpe": str(roberta / "vocab.json"),
            "sentencepiece": str(albert / "spiece.model")}


@pytest.mark.parametrize("kind", ["wordpiece", "bpe", "sentencepiece"])
def test_config_carries_the_vocabulary_and_files_can_be_written_back(kind, vocab_files, tmp_path):
    preprocessor = text_preprocessor(vocab_files[kind], True, 16)
    config = json.loads(json.dumps(preprocessor.get_config()))  # what a .keras file stores
    assert not any(config["tokenizer"]["config"].get(key) for key in ("vocab_file", "merges_file", "model_file"))
    expected = preprocessor([tf.constant(TEXTS), tf.constant(TEXTS[::-1])])
    for rebuilt in (Preprocessor.from_config(config),
                    text_preprocessor(write_tokenizer_files_of(preprocessor.tokenizer, str(tmp_path)), True, 16)):
        assert rebuilt.layout == preprocessor.layout and rebuilt.seq_length == 16
        got = rebuilt([tf.constant(TEXTS), tf.constant(TEXTS[::-1])])
        for name in expected:
            np.testing.assert_array_equal(got[name].numpy(), expected[name].numpy())
