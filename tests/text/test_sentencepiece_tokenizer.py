"""SentencepieceTokenizer (ALBERT): the ids of transformers' AlbertTokenizerFast on real corpora and a fuzz corpus.

The spiece.model is trained here with the `sentencepiece` package on shared text, with ALBERT's options
(unigram; pad 0, unk 1; control symbols [CLS] [SEP] [MASK]; ALBERT's user-defined symbols).

The one known difference: the kernel sums path scores in float32, `tokenizers` in float64, so on an
exact tie (the same pieces in another order, e.g. "000" as "0" "00" or "00" "0") rounding may pick
the other order. Every mismatch must be such a reordering.
"""

import random
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from official_bert.text import albert_normalization
from official_bert.text.preprocessing import Preprocessor
from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer, load_sentencepiece_tokenizer
import regenerate_albert_unicode_data
import text_corpora as corpora

pytestmark = pytest.mark.slow

USER_DEFINED = ["(", ")", '"', "-", ".", "–", "£", "€"]  # ALBERT's spm_train --user_defined_symbols
SEQ_LENGTH = 24


@pytest.fixture(scope="module")
def albert_dir(shared_data, tmp_path_factory):
    spm = pytest.importorskip("sentencepiece")
    texts = (corpora.sst2(shared_data)[:8000] + corpora.mrpc(shared_data)[:4000] + corpora.cola(shared_data)[:3000]
             + corpora.squad(shared_data)[:2000] + corpora.conll2003(shared_data)[:4000])
    path = tmp_path_factory.mktemp("albert")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_prefix=str(path / "spiece"), vocab_size=2000, model_type="unigram",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=USER_DEFINED, character_coverage=0.99995, shuffle_input_sentence=True,
        num_threads=2, minloglevel=2)
    return path


@pytest.fixture(scope="module")
def tokenizer(albert_dir):
    return SentencepieceTokenizer(model_file=str(albert_dir / "spiece.model"))


def _reference(albert_dir, lower_case=True):
    transformers = pytest.importorskip("transformers")
    reference = transformers.AlbertTokenizerFast.from_pretrained(str(albert_dir), do_lower_case=lower_case)
    reference.backend_tokenizer.encode_special_tokens = True  # literal "[SEP]" is text, as in ours
    return reference


@pytest.fixture(scope="module")
def reference(albert_dir):
    return _reference(albert_dir)


def fuzz_texts(count=2000, seed=0):
    """Random strings over accents, CJK, emoji, control and invisible characters, whitespace runs, ALBERT's
    symbols and their full-width forms, quotes, numbers, literal special tokens, long words."""
    alphabet = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                + list(",;:!?'`\"()-.–—£€$%&*/\\[]{}<>|~^_=+#@")
                + list("éèêëÉÈçÇñÑüÜößØøåÅæÆłŁıİ") + ["e\u0301", "a\u0308", "\u0301", "\u0323"]
                + list("中文日本語한국어ひらがなカタカナ") + list("😀👍🏽🇩🇪") + ["\u200d", "\u200b", "\ufeff", "\u00ad"]
                + [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2028", "\u2009", "\u2581"]
                + ["\x00", "\x01", "\x7f", "\x85", "\ue000", "\U000f0001"] + list("ＡＢｃ０１（）＂－．｀＇ﬁ½²№™")
                + ["``", "''", "<unk>", "<pad>", "[CLS]", "[SEP]", "[MASK]", "1,000", "3.5"])
    rng = random.Random(seed)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 5, 10, 30, 80]))) for _ in range(count)]
    return texts + ["x" * 1000, "ab" * 300, "  leading and trailing  ", "a  \t\n  b", "``quoted'' (x) 'a' \"b\""]


def _ids(tokenizer, texts, batch_size=4096):
    out = []
    for i in range(0, len(texts), batch_size):
        out += tokenizer(tf.constant(texts[i:i + batch_size])).to_list()
    return out


def _mismatches(tokenizer, reference, texts):
    """(texts whose ids differ, texts whose ids differ by more than the order of equal-score pieces)."""
    ours = _ids(tokenizer, texts)
    expected = [e.ids for e in reference.backend_tokenizer.encode_batch(texts, add_special_tokens=False)]
    differ = [i for i, (a, b) in enumerate(zip(ours, expected)) if a != b]
    return differ, [texts[i] for i in differ if sorted(ours[i]) != sorted(expected[i])]


def _fuzz_corpus():
    return fuzz_texts() + corpora.hard_cases() + corpora.deleted_character_cases()


@pytest.fixture(scope="module")
def corpus_mismatches(tokenizer, reference, shared_data):
    """corpus name (a real corpus, or "fuzz") -> (its texts, `_mismatches` of the module's tokenizer on them),
    computed once: the ids tests and the offsets tests read the same comparison."""
    computed = {}

    def mismatches(corpus):
        if corpus not in computed:
            texts = _fuzz_corpus() if corpus == "fuzz" else corpora.REAL_CORPORA[corpus](shared_data)
            computed[corpus] = texts, _mismatches(tokenizer, reference, texts)
        return computed[corpus]
    return mismatches


@pytest.mark.parametrize("corpus", sorted(corpora.REAL_CORPORA))
def test_real_corpus_ids_equal_reference(corpus_mismatches, corpus):
    _, (differ, not_ties) = corpus_mismatches(corpus)
    assert not_ties == []
    assert len(differ) <= 10  # float32 ties ("26,000": "0" "00" or "00" "0") are rare


@pytest.mark.parametrize("lower_case", [True, False])
def test_fuzz_and_hard_case_ids_equal_reference(albert_dir, corpus_mismatches, lower_case):
    if lower_case:
        texts, (differ, not_ties) = corpus_mismatches("fuzz")
    else:
        tokenizer = SentencepieceTokenizer(model_file=str(albert_dir / "spiece.model"), lower_case=False)
        texts = _fuzz_corpus()
        differ, not_ties = _mismatches(tokenizer, _reference(albert_dir, lower_case=False), texts)
    assert not_ties == []
    assert len(differ) < len(texts) // 50


@pytest.mark.parametrize("corpus", sorted(corpora.REAL_CORPORA))
def test_real_corpus_offsets_equal_reference(tokenizer, reference, corpus_mismatches, corpus):
    """Every text whose ids equal the reference's (all but the float32 ties) has its offsets too."""
    texts, (tied, _) = corpus_mismatches(corpus)
    assert [texts[i] for i in corpora.offset_mismatches(tokenizer, texts, reference.backend_tokenizer)
            if i not in tied] == []


def test_fuzz_offsets_equal_reference_except_after_deleted_characters(tokenizer, reference, corpus_mismatches):
    """Fuzz and hard cases: equal, except in texts with control or format characters that the normalizer deletes
    (tokenizers shifts the offsets after some of those: "\x01word" -> (0, 4), "\x01wor"; ours are (1, 5))."""
    texts, (tied, _) = corpus_mismatches("fuzz")
    deletes = [any(unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r" for c in t) for t in texts]
    differ = [i for i in corpora.offset_mismatches(tokenizer, texts, reference.backend_tokenizer) if i not in tied]
    assert [texts[i] for i in differ if not deletes[i]] == []
    assert len(differ) < sum(deletes) // 20
    text = "``Quoted'' ﬁne 中文"
    ids, starts, ends = tokenizer(tf.constant(["\x01word", text, ""]), with_offsets=True)
    assert list(zip(starts.to_list()[0], ends.to_list()[0])) == [(1, 5)]
    assert [tokenizer.get_vocab()[i] for i in ids.to_list()[1]] == [
        "\u2581", '"', "q", "u", "o", "ted", '"', "\u2581", "f", "ine", "\u2581", "<unk>"]
    # '"' from "``" spans the second backtick; a lone "▁" the first character of its word; "<unk>" its whole run
    assert [text.encode()[a:b].decode() for a, b in zip(starts.to_list()[1], ends.to_list()[1])] == [
        "`", "`", "Q", "u", "o", "ted", "'", "ﬁ", "ﬁ", "ﬁne", "中", "中文"]
    assert ids.to_list()[2] == starts.to_list()[2] == []


def test_albert_normalization_and_added_symbols(tokenizer, reference):
    texts = ["``Quoted''", "Café Ｆｕｌｌ", "a(b) (c", "（x）", "1,000.5", "x\x00.", "}<unk>"]
    assert _ids(tokenizer, texts) == [e.ids for e in reference.backend_tokenizer.encode_batch(
        texts, add_special_tokens=False)]
    pieces = tokenizer.get_vocab()
    assert [pieces[i] for i in _ids(tokenizer, ["a(b"])[0]][1:] == ["(", "\u2581b"]  # "(" starts a new word


def test_pack_pairs_equal_reference(tokenizer, reference, shared_data):
    pairs = corpora.mrpc_pairs(shared_data, "dev")[:200] + [("", ""), ("a", ""), ("x " * 40, "y")]
    preprocessor = Preprocessor(tokenizer, SEQ_LENGTH)
    first, second = (tf.constant([p[i] for p in pairs]) for i in (0, 1))
    inputs, truncated = preprocessor.pack([first, second])
    reference.backend_tokenizer.encode_special_tokens = False  # [CLS] and [SEP] added by the template
    expected = reference([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first",
                         max_length=SEQ_LENGTH, padding="max_length", return_token_type_ids=True)
    reference.backend_tokenizer.encode_special_tokens = True
    np.testing.assert_array_equal(inputs["input_word_ids"].numpy(), expected["input_ids"])
    np.testing.assert_array_equal(inputs["input_type_ids"].numpy(), expected["token_type_ids"])
    np.testing.assert_array_equal(inputs["input_mask"].numpy(), expected["attention_mask"])
    assert truncated.numpy()[-1] and not truncated.numpy()[-2]
    single = preprocessor(first)
    assert single["input_word_ids"].shape == (len(pairs), SEQ_LENGTH)
    ids, starts, ends = preprocessor.tokenize(first, with_offsets=True)
    assert ids.to_list() == tokenizer(first).to_list() and starts.to_list() != ends.to_list()


def test_special_tokens_and_config(albert_dir, tokenizer):
    assert tokenizer.get_special_tokens_dict() == {
        "vocab_size": 2000, "start_of_sequence_id": 2, "end_of_segment_id": 3, "padding_id": 0, "unk_id": 1,
        "mask_id": 4}
    text = tf.constant(["Ein schönes Beispiel, 東京! (1,000)"])
    assert SentencepieceTokenizer.from_config(tokenizer.get_config())(text).to_list() == tokenizer(text).to_list()
    from_bytes = SentencepieceTokenizer(model=(albert_dir / "spiece.model").read_bytes())
    assert SentencepieceTokenizer.from_config(from_bytes.get_config())(text).to_list() == tokenizer(text).to_list()
    assert tokenizer(tf.constant("hello")).shape[0] == 1


def test_tokenizer_from_directory(albert_dir, tmp_path):
    assert load_sentencepiece_tokenizer(albert_dir).lower_case
    (tmp_path / "spiece.model").write_bytes((albert_dir / "spiece.model").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": false}', encoding="utf-8")
    assert not load_sentencepiece_tokenizer(tmp_path).lower_case
    (tmp_path / "tokenizer_config.json").write_text('{"keep_accents": true}', encoding="utf-8")
    with pytest.raises(ValueError, match="tokenizer_config.json: keep_accents"):
        load_sentencepiece_tokenizer(tmp_path)
    with pytest.raises(FileNotFoundError, match="no spiece.model"):
        load_sentencepiece_tokenizer(tmp_path / "missing")


def test_bad_model_files_are_named(tmp_path):
    path = tmp_path / "spiece.model"
    path.write_bytes(b"\xff\xff\xff not a model")
    with pytest.raises(ValueError, match="spiece.model is not a SentencePiece model"):
        SentencepieceTokenizer(model_file=str(path))
    with pytest.raises(ValueError, match="exactly one"):
        SentencepieceTokenizer()


def test_bpe_model_is_refused(shared_data, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpora.cola(shared_data)[:2000]),
                                   model_prefix=str(tmp_path / "bpe"), vocab_size=300, model_type="bpe",
                                   minloglevel=2)
    with pytest.raises(ValueError, match="bpe.model is not a unigram SentencePiece model"):
        SentencepieceTokenizer(model_file=str(tmp_path / "bpe.model"))


def test_shipped_tables_equal_fresh_measurement():
    pytest.importorskip("tokenizers")
    assert regenerate_albert_unicode_data.measure() == albert_normalization.load_raw()


def test_tflite_without_flex_gives_identical_outputs(tokenizer, shared_data):
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    import tensorflow_text

    preprocessor = Preprocessor(tokenizer, SEQ_LENGTH)

    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
        def pack_pair(self, first, second):
            return preprocessor([first, second])

    module = Module()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.pack_pair.get_concrete_function()], module)
    converter.allow_custom_ops = True
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # no SELECT_TF_OPS (Flex)
    model = converter.convert()
    from tensorflow.lite.python import schema_py_generated as schema

    codes = schema.ModelT.InitFromPackedBuf(model, 0).operatorCodes
    assert {c.customCode.decode() for c in codes if c.customCode} == {"TFText>FastSentencepieceTokenize"}
    interpreter = litert.InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_content=model)
    pairs = corpora.mrpc_pairs(shared_data, "dev")[:32]
    first = [p[0] for p in pairs] + fuzz_texts(32, seed=1)
    second = [p[1] for p in pairs] + fuzz_texts(32, seed=2)
    (signature,) = interpreter.get_signature_list()
    outputs = interpreter.get_signature_runner(signature)(first=np.array(first, dtype=object),
                                                          second=np.array(second, dtype=object))
    expected = module.pack_pair(tf.constant(first), tf.constant(second))
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value.numpy(), err_msg=key)
