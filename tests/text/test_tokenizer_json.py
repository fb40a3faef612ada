"""Checkpoint directories whose tokenizer is a Hugging Face `tokenizer.json` (all that transformers 5 saves): RoBERTa's
byte-level BPE read from it gives transformers' ids; what our in-graph tokenizers cannot reproduce (added tokens, a
vocab.txt that disagrees with it, an empty vocab, ALBERT without spiece.model) is one clear error naming the file;
a vocab file of another family's kind is refused."""

import json
import shutil

import numpy as np
import pytest

from official_bert.text.preprocessing import find_family_vocab, load_preprocessor, read_vocab_file


def _mrpc_pairs(shared_data, count):
    lines = (shared_data / "glue" / "MRPC" / "dev.tsv").read_text(encoding="utf-8-sig").splitlines()[1:count + 1]
    return [tuple(line.split("\t")[3:5]) for line in lines]


def _hf_saved(source, directory, added=()):
    """`AutoTokenizer.from_pretrained(source)` (with `added` tokens) saved by transformers into `directory`, with
    `source`'s config.json; returns (directory, the tokenizer)."""
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    if added:
        tokenizer.add_tokens(list(added))
    tokenizer.save_pretrained(str(directory))
    shutil.copyfile(source / "config.json", directory / "config.json")
    return directory, tokenizer


@pytest.fixture(scope="module")
def roberta_json_dir(shared_data, tmp_path_factory):
    """A tiny RoBERTa checkpoint's tokenizer saved by transformers 5: tokenizer.json + tokenizer_config.json only."""
    from tests.hf_references import roberta_checkpoint

    root = tmp_path_factory.mktemp("roberta_json")
    source = roberta_checkpoint(shared_data, root / "source", 64)
    directory, tokenizer = _hf_saved(source, root / "saved")
    assert not (directory / "vocab.json").exists() and not (directory / "merges.txt").exists()
    return directory, tokenizer


def test_a_roberta_tokenizer_json_alone_gives_transformers_ids(roberta_json_dir, shared_data, tmp_path):
    directory, reference = roberta_json_dir
    pairs = _mrpc_pairs(shared_data, 300)
    spec = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    assert isinstance(spec["model"]["merges"][0], list)  # transformers 5 writes [left, right] pairs
    strings = tmp_path / "strings"  # older tokenizers write "left right" strings
    strings.mkdir()
    spec["model"]["merges"] = [" ".join(pair) for pair in spec["model"]["merges"]]
    (strings / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    shutil.copyfile(directory / "config.json", strings / "config.json")
    expected = reference([a for a, _ in pairs], [b for _, b in pairs], padding="max_length", max_length=128,
                         truncation=True)["input_ids"]
    import tensorflow as tf

    for path in (directory, strings):
        preprocessor = load_preprocessor(path, 128)
        ids = preprocessor([tf.constant([a for a, _ in pairs]), tf.constant([b for _, b in pairs])])
        np.testing.assert_array_equal(ids["input_word_ids"].numpy(), np.array(expected))
    vocab, lower, source = find_family_vocab(directory, "roberta", vocab_size=len(reference))
    assert source == str(directory / "tokenizer.json") and lower is False
    assert len(read_vocab_file(directory / "tokenizer.json", "roberta")) == len(reference)


def test_a_tokenizer_json_bpe_is_written_as_vocab_json_and_merges_txt_with_the_same_ids(roberta_json_dir,
                                                                                         shared_data, tmp_path):
    """What a model_dir trained from such a checkpoint keeps (`write_tokenizer_files`): RoBERTa's two files, read
    back into transformers' ids."""
    import tensorflow as tf

    from official_bert.text.preprocessing import tokenizer_from_files, write_tokenizer_files

    directory, reference = roberta_json_dir
    vocab, _, _ = find_family_vocab(directory, "roberta")
    assert write_tokenizer_files(vocab, str(tmp_path)) == str(tmp_path / "vocab.json")
    texts = [a for a, _ in _mrpc_pairs(shared_data, 100)]
    ids = tokenizer_from_files(str(tmp_path / "vocab.json"), False)(tf.constant(texts)).to_list()
    assert ids == reference(texts, add_special_tokens=False)["input_ids"]


def test_added_tokens_are_refused_naming_tokenizer_json(roberta_json_dir, minilm_dir, tmp_path):
    """`tok.add_tokens([...]); model.resize_token_embeddings(...)`: transformers keeps them whole, we cannot."""
    (tmp_path / "bert").mkdir()
    bert, tokenizer = _hf_saved(minilm_dir, tmp_path / "bert", added=["<ent>", "covid19"])
    assert tokenizer("the <ent> has covid19")["input_ids"] == [101, 1996, 30522, 2038, 30523, 102]
    message = (r"tokenizer.json: 2 added token\(s\) outside the model's vocab \('<ent>', 'covid19', in 'added_tokens'"
               r"\); official-bert's in-graph tokenizer does not support added tokens")
    with pytest.raises(ValueError, match=message):
        load_preprocessor(bert, 16)
    (tmp_path / "roberta").mkdir()
    roberta, _ = _hf_saved(roberta_json_dir[0], tmp_path / "roberta", added=["<ent>", "covid19"])
    with pytest.raises(ValueError, match=message):
        load_preprocessor(roberta, 16)


def test_vocab_txt_and_tokenizer_json_that_disagree_are_refused_naming_both(minilm_dir, tmp_path):
    directory = tmp_path / "both"
    directory.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(minilm_dir / name, directory / name)
    spec = json.loads((minilm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    tokens = sorted(spec["model"]["vocab"], key=spec["model"]["vocab"].get)
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    assert load_preprocessor(directory, 16).tokenizer.vocab_size == len(tokens)  # the same vocab: fine
    tokens[7592], tokens[2088] = tokens[2088], tokens[7592]  # "hello" <-> "world"
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"both: vocab.txt and tokenizer.json hold different vocabularies \(id 2088 "
                                         r"is 'hello' in vocab.txt, 'world' in tokenizer.json\); transformers reads "
                                         r"tokenizer.json"):
        load_preprocessor(directory, 16)


def test_a_tokenizer_json_of_only_special_tokens_is_one_clear_error(minilm_dir, tmp_path):
    """transformers 5's `BertTokenizer(vocab_file=...)` builds an empty tokenizer, which save_pretrained writes."""
    spec = json.loads((minilm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["vocab"] = {t["content"]: i for i, t in enumerate(spec["added_tokens"])}
    for i, token in enumerate(spec["added_tokens"]):
        token["id"] = i
    directory = tmp_path / "empty"
    directory.mkdir()
    (directory / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    shutil.copyfile(minilm_dir / "config.json", directory / "config.json")
    with pytest.raises(ValueError, match=r"empty/tokenizer.json: field 'model.vocab' holds only the 5 special tokens "
                                         r"\[PAD\], \[UNK\], \[CLS\], \[SEP\], \[MASK\] and no text tokens"):
        load_preprocessor(directory, 16)
    (directory / "tokenizer.json").unlink()
    (directory / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty/vocab.txt: holds only the 5 special tokens \[PAD\], \[UNK\], "
                                         r"\[CLS\], \[SEP\], \[MASK\] and no text tokens"):
        load_preprocessor(directory, 16)
    from official_bert.text import BertTokenizer

    with pytest.raises(ValueError, match=r"the given vocab has no tokens to tokenize text with, only \[PAD\]"):
        BertTokenizer(vocab=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])


def test_an_albert_tokenizer_json_without_spiece_model_says_where_to_get_it(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 30000}))
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "Unigram", "vocab": [["<pad>", 0.0]]}}))
    with pytest.raises(FileNotFoundError, match=r"an ALBERT checkpoint needs its SentencePiece model spiece.model, "
                                                r"and there is only tokenizer.json \(transformers 5 saves no "
                                                r"spiece.model\); copy the spiece.model of the model"):
        load_preprocessor(tmp_path, 16)


def test_a_vocab_file_of_another_familys_kind_is_refused(shared_data, tmp_path):
    vocab_txt = shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"
    with pytest.raises(ValueError, match=r"vocab.txt: a WordPiece vocabulary, but a RoBERTa checkpoint's tokenizer "
                                         r"is a byte-level BPE \(vocab.json \+ merges.txt\)"):
        read_vocab_file(vocab_txt, "roberta")
    (tmp_path / "spiece.model").write_bytes(b"")
    with pytest.raises(ValueError, match=r"spiece.model: a SentencePiece model, but a DistilBERT checkpoint's "
                                         r"tokenizer is a WordPiece vocabulary \(vocab.txt\)"):
        read_vocab_file(tmp_path / "spiece.model", "distilbert")
    assert len(read_vocab_file(vocab_txt, "distilbert")) == 30522


def test_the_xlm_roberta_refusal_lists_every_family_with_a_preprocessor(tmp_path):
    with pytest.raises(ValueError, match=r"RoBERTa \(vocab.json \+ merges.txt\), ALBERT \(spiece.model\), BERT and "
                                         "DistilBERT do"):
        find_family_vocab(tmp_path, "xlm-roberta")


def test_roberta_files_beside_a_tokenizer_json_must_agree_with_it(roberta_json_dir, tmp_path):
    """transformers reads tokenizer.json first; transformers 4 recorded `add_tokens` in added_tokens.json."""
    saved, reference = roberta_json_dir
    source = saved.parent / "source"
    for name in ("vocab.json", "merges.txt", "config.json"):
        shutil.copyfile(source / name, tmp_path / name)
    shutil.copyfile(saved / "tokenizer.json", tmp_path / "tokenizer.json")
    vocab, _, source_file = find_family_vocab(tmp_path, "roberta")
    assert source_file == str(tmp_path / "vocab.json") and len(vocab) == len(reference)  # they agree
    merges = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "merges.txt").write_text("\n".join(merges[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab.json \+ merges.txt and tokenizer.json hold different byte-level "
                                         "BPEs; transformers reads tokenizer.json"):
        load_preprocessor(tmp_path, 16)
    (tmp_path / "tokenizer.json").unlink()
    (tmp_path / "added_tokens.json").write_text(json.dumps({"<ent>": len(reference)}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"added_tokens.json: 1 added token\(s\) outside the model's vocab "
                                         r"\('<ent>'\); official-bert's in-graph tokenizer does not support added"):
        load_preprocessor(tmp_path, 16)


def test_an_albert_tokenizer_json_with_added_tokens_beside_its_spiece_model_is_refused(tmp_path):
    (tmp_path / "spiece.model").write_bytes(b"")  # (not read before the check)
    vocab = [["<pad>", 0.0], ["<unk>", 0.0], ["[CLS]", 0.0], ["[SEP]", 0.0], ["▁the", -2.0]]
    added = [{"id": i, "content": piece, "special": True} for i, (piece, _) in enumerate(vocab[:4])]
    added.append({"id": 5, "content": "<ent>", "special": False})
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "Unigram", "vocab": vocab},
                                                         "added_tokens": added}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer.json: 1 added token\(s\) outside the model's vocab \('<ent>', in "
                                         "'added_tokens'\\)"):
        find_family_vocab(tmp_path, "albert")
