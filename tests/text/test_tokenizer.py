"""BertTokenizer: identical ids to Hugging Face `tokenizers` on real corpora and hard cases."""

import pytest
import tensorflow as tf

from official_bert.text import BertTokenizer
import text_corpora as corpora


@pytest.mark.slow
@pytest.mark.parametrize("corpus", sorted(corpora.REAL_CORPORA))
def test_real_corpus_ids_equal_reference(tokenizer, shared_data, tokenizer_json, corpus):
    texts = corpora.REAL_CORPORA[corpus](shared_data)
    assert len(texts) > 10_000
    bad = corpora.mismatches(tokenizer, texts, tokenizer_json)
    assert [texts[i] for i in bad] == []


def test_hard_case_ids_equal_reference(tokenizer, tokenizer_json):
    texts = corpora.hard_cases()
    bad = corpora.mismatches(tokenizer, texts, tokenizer_json, special_tokens_as_text=True)
    assert [texts[i] for i in bad] == []


def test_cased_ids_equal_reference_cased_normalizer(vocab_file, shared_data):
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer(tokenizers.models.WordPiece.from_file(vocab_file, unk_token="[UNK]"))
    reference.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    reference.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    texts = corpora.hard_cases() + corpora.mrpc(shared_data)[:2000]
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    ours = corpora.our_ids(BertTokenizer(vocab_file=vocab_file, lower_case=False), texts)
    assert [t for t, a, b in zip(texts, ours, expected) if a != b] == []


def test_known_ids(tokenizer):
    ids = tokenizer(tf.constant(["Hello world!", "", "unaffable"])).to_list()
    assert ids[0] == [7592, 2088, 999]
    assert ids[1] == []
    assert ids[2] == [14477, 20961, 3468]  # un ##aff ##able


def test_scalar_input_is_a_batch_of_one(tokenizer):
    assert tokenizer(tf.constant("Hello")).to_list() == [[7592]]


def test_words_over_100_characters_become_one_unk(tokenizer):
    ids, starts, ends = tokenizer(tf.constant(["ab" * 50, "ab" * 50 + "a", "x " + "é" * 101]), with_offsets=True)
    assert ids.to_list()[0] != [100] and len(ids.to_list()[0]) > 1  # 100 characters: tokenized
    assert ids.to_list()[1] == [100]  # 101 characters
    assert (starts.to_list()[1], ends.to_list()[1]) == ([0], [101])
    assert ids.to_list()[2][1:] == [100]  # 101 characters, 202 bytes
    assert (starts.to_list()[2][1:], ends.to_list()[2][1:]) == ([2], [204])


@pytest.fixture(scope="module")
def reference(tokenizer_json):
    pytest.importorskip("tokenizers")
    return corpora.reference_tokenizer(tokenizer_json, special_tokens_as_text=True)


@pytest.fixture(scope="module")
def cased(vocab_file):
    pytest.importorskip("tokenizers")
    return (BertTokenizer(vocab_file=vocab_file, lower_case=False),
            corpora.reference_tokenizer(vocab_file=vocab_file, special_tokens_as_text=True))


@pytest.mark.slow
@pytest.mark.parametrize("corpus", sorted(corpora.REAL_CORPORA))
def test_real_corpus_offsets_equal_reference(tokenizer, reference, shared_data, corpus):
    texts = corpora.REAL_CORPORA[corpus](shared_data)
    assert [texts[i] for i in corpora.offset_mismatches(tokenizer, texts, reference)] == []


@pytest.mark.parametrize("lower_case", [True, False])
def test_hard_case_offsets_equal_reference(tokenizer, reference, cased, lower_case):
    ours, expected = (tokenizer, reference) if lower_case else cased
    texts = corpora.hard_cases()
    assert [texts[i] for i in corpora.offset_mismatches(ours, texts, expected)] == []


@pytest.mark.parametrize("lower_case", [True, False])
def test_offsets_around_deleted_characters_equal_reference(tokenizer, reference, cased, lower_case):
    # Zero-width, BOM, direction marks, controls (and accents when lower-casing) inside, before and after
    # words and word pieces: the normalizer's own offsets run each piece's end over those after it.
    ours, expected = (tokenizer, reference) if lower_case else cased
    texts = corpora.deleted_character_cases()
    assert [texts[i] for i in corpora.offset_mismatches(ours, texts, expected)] == []


def test_piece_ends_before_the_characters_deleted_after_it(tokenizer):
    texts = ["zero\u200b width", "cafe\u0301\u200b!", "caf\u00e9\ufeff!", "\u200bx\u200e"]
    ids, starts, ends = tokenizer(tf.constant(texts), with_offsets=True)
    assert ids.to_list() == [[5717, 9381], [7668, 999], [7668, 999], [1060]]
    # bytes: U+200B, U+FEFF and U+200E take 3, U+0301 and é take 2; the deleted ones belong to no piece
    assert [list(zip(s, e)) for s, e in zip(starts.to_list(), ends.to_list())] == [
        [(0, 4), (8, 13)], [(0, 4), (9, 10)], [(0, 5), (8, 9)], [(3, 4)]]


def test_literal_special_tokens_are_tokenized_as_text(tokenizer):
    # As Google's original tokenizer: user text cannot inject [SEP] or [MASK].
    assert tokenizer(tf.constant(["[SEP] [MASK]"])).to_list() == [[1031, 19802, 1033, 1031, 7308, 1033]]


def test_special_tokens_dict(tokenizer):
    assert tokenizer.get_special_tokens_dict() == {
        "vocab_size": 30522, "start_of_sequence_id": 101, "end_of_segment_id": 102, "padding_id": 0,
        "unk_id": 100, "mask_id": 103}


def test_vocab_list_equals_vocab_file(tokenizer, vocab_file):
    from_list = BertTokenizer(vocab=tokenizer.get_vocab())
    texts = tf.constant(["Ein schönes Beispiel, 東京!", "¼ ﬁ"])
    assert from_list(texts).to_list() == tokenizer(texts).to_list()
    assert BertTokenizer.from_config(tokenizer.get_config())(texts).to_list() == tokenizer(texts).to_list()


def test_missing_vocab_file_names_the_file(tmp_path):
    path = tmp_path / "nope" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match="nope/vocab.txt"):
        BertTokenizer(vocab_file=str(path))


def test_vocab_without_special_tokens_names_file_and_tokens(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\nhello\n##s\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[CLS\], \[SEP\]"):
        BertTokenizer(vocab_file=str(path))
    with pytest.raises(ValueError, match=r"given vocab lacks .*\[UNK\]"):
        BertTokenizer(vocab=["[PAD]", "[CLS]", "[SEP]", "a"])


def test_needs_exactly_one_vocab_source(vocab_file):
    with pytest.raises(ValueError, match="exactly one"):
        BertTokenizer()
    with pytest.raises(ValueError, match="exactly one"):
        BertTokenizer(vocab_file=vocab_file, vocab=["[PAD]"])
