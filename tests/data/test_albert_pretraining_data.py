"""ALBERT's pre-training data: sentence-order pairs (swapped half the time, the label says which) and n-gram
masking (spans of 1 to 3 words, length n with probability 1/n normalised), checked by their rules and by
`MaskingStatistics` within 4 binomial standard errors."""

import collections
import math
import random

import pytest

from official_bert.data import pretraining_instances as pi
from official_bert.data.pretraining_masking import NGRAM_PROBS
from official_bert.data.pretraining_vocab import MaskingVocab, tokenize_documents
from official_bert.data.pretraining_records import instances_to_arrays
from official_bert.data.pretraining_stats import MaskingStatistics
from official_bert.data.sentence_corpus import squad_documents

MAX_SEQ, MAX_PRED, PROB, SHORT = 64, 10, 0.15, 0.1
# Ids 0..4 special, then every sentence of the synthetic corpus has its own increasing ids (order is visible).
VOCAB = MaskingVocab(vocab_size=100_000, cls_id=1, sep_id=2, mask_id=3, pad_id=0, suffix_ids=frozenset())


def _within(hits, n, p, sigmas=4.0):
    observed, sigma = hits / n, math.sqrt(p * (1 - p) / n)
    assert abs(observed - p) <= sigmas * sigma, f"{observed:.4f} vs {p:.4f} +- {sigmas} x {sigma:.4f} (n={n})"


@pytest.fixture(scope="module")
def ordered_documents():
    """600 documents of 3 to 12 sentences of 4 to 20 tokens; token ids increase through each document."""
    rng = random.Random(0)
    documents, next_id = [], 10
    for _ in range(600):
        document = []
        for _ in range(rng.randint(3, 12)):
            length = rng.randint(4, 20)
            document.append(list(range(next_id, next_id + length)))
            next_id += length
        documents.append(document)
    return documents


def test_sentence_order_pairs_are_in_order_or_swapped_half_the_time(ordered_documents):
    rng = random.Random(1)
    pairs = [p for _ in range(3) for i in range(len(ordered_documents))
             for p in pi.create_sentence_pairs(ordered_documents, i, MAX_SEQ, SHORT, VOCAB, rng, sentence_order=True)]
    coin_flips = swapped = 0
    for pair in pairs:
        first = pair.segment_ids.index(1)
        a, b = pair.tokens[1:first - 1], pair.tokens[first:-1]
        assert a and b and pair.tokens[first - 1] == VOCAB.sep_id
        if pair.forced_random_next:  # a chunk of one sentence: B from another document, as ALBERT's code does
            assert pair.is_random_next
            continue
        coin_flips += 1
        swapped += pair.is_random_next
        assert a == sorted(a) and b == sorted(b)  # each segment is contiguous text in order
        if pair.is_random_next:
            assert max(b) < min(a)  # B came first in the document
        else:
            assert max(a) < min(b)
    assert coin_flips > 2000
    _within(swapped, coin_flips, 0.5)


@pytest.fixture(scope="module")
def squad_instances(shared_data):
    """Real text (300 SQuAD paragraphs, WordPiece), whole-word n-gram masking, sentence order: 2 passes."""
    from official_bert.text import BertTokenizer

    tokenizer = BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    vocab = MaskingVocab.from_tokenizer(tokenizer)
    text = squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json", max_documents=300)
    documents, _ = tokenize_documents(tokenizer, text)
    targets, draws = [], collections.Counter()
    instances = pi.create_instances(documents, MAX_SEQ, SHORT, PROB, MAX_PRED, vocab, random.Random(2), dupe_factor=2,
                                    do_whole_word_mask=True, document_targets=targets, sentence_order=True,
                                    ngram_masking=True, ngram_draws=draws)
    return vocab, instances, targets, draws


def test_ngram_spans_follow_albert_lengths_and_statistics_agree(squad_instances):
    vocab, instances, targets, draws = squad_instances
    spans = sum(draws.values())
    assert spans > 3000 and set(draws) == {1, 2, 3}
    for n, p in zip((1, 2, 3), (6 / 11, 3 / 11, 2 / 11)):
        assert NGRAM_PROBS[n - 1] == pytest.approx(p)
        _within(draws[n], spans, p)
    stats = MaskingStatistics(vocab, PROB, MAX_PRED, do_whole_word_mask=True, sentence_order=True, ngram_masking=True)
    stats.update(instances_to_arrays(instances, MAX_SEQ, MAX_PRED))
    stats.update_generation(targets, MAX_SEQ - 3, [i.forced_random_next for i in instances], draws)
    rows = {row["name"]: row for row in stats.comparisons(short_seq_prob=SHORT)}
    assert {"swapped (SOP), coin-flip pairs", "1-word spans (n-gram masking)", "3-word spans (n-gram masking)"
            } <= set(rows)
    assert "instances with the rule's count" not in rows  # n-grams may fall short of it, never above
    assert all(abs(row["z"]) < 4 for row in rows.values()), stats.format_report(SHORT)
    assert stats.counts["count_above"] == 0 and stats.counts["split_words"] == 0
    assert "swapped (SOP) (label 1)" in stats.format_report(SHORT)


def test_ngram_masking_masks_runs_of_words(squad_instances):
    # A predicted token's neighbour is predicted far more often with spans than the masking rate would give.
    vocab, instances, _, _ = squad_instances
    predicted = neighbours = 0
    for instance in instances:
        chosen = set(instance.masked_lm_positions)
        predicted += len(chosen)
        neighbours += sum(p + 1 in chosen for p in chosen)
        assert len(chosen) <= min(MAX_PRED, max(1, round(len(instance.tokens) * PROB)))
        assert not set(instance.masked_lm_labels) & {vocab.cls_id, vocab.sep_id}
    assert neighbours / predicted > 0.35


def test_ngram_masking_with_single_tokens_is_deterministic_and_never_masks_specials(ordered_documents):
    def make(seed):
        return pi.create_instances(ordered_documents[:50], MAX_SEQ, SHORT, PROB, MAX_PRED, VOCAB, random.Random(seed),
                                   ngram_masking=True)

    first, again = make(3), make(3)
    assert [i.tokens for i in first] == [i.tokens for i in again]
    for instance in first:
        assert all(label not in (VOCAB.cls_id, VOCAB.sep_id) for label in instance.masked_lm_labels)
        assert instance.masked_lm_positions == sorted(set(instance.masked_lm_positions))


@pytest.fixture(scope="module")
def spiece_model(shared_data, tmp_path_factory):
    """A 2,000-piece unigram spiece.model with ALBERT's options, trained on SQuAD dev text."""
    spm = pytest.importorskip("sentencepiece")
    transformers = pytest.importorskip("transformers")
    path = tmp_path_factory.mktemp("albert_data")
    transformers.AlbertConfig(vocab_size=2000).to_json_file(str(path / "config.json"))  # AlbertTokenizerFast reads it
    sentences = [s for document in squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json") for s in document]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_prefix=str(path / "spiece"), vocab_size=2000, model_type="unigram",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"], num_threads=2, minloglevel=2)
    return path / "spiece.model"


@pytest.mark.slow
def test_spiece_model_pretraining_data_tokenizes_as_albert_and_masks_whole_words(spiece_model, shared_data, tmp_path):
    """ALBERT's own data: sentences tokenized as AlbertTokenizerFast, whole words by ALBERT's start-piece rule,
    n-gram spans and sentence order by their statistics; the writer takes the spiece.model as its vocab."""
    import numpy as np
    import tensorflow as tf
    import transformers

    from official_bert.data.pretraining_writer import PretrainingDataConfig, write_pretraining_records
    from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

    tokenizer = SentencepieceTokenizer(model_file=str(spiece_model))
    vocab = MaskingVocab.from_tokenizer(tokenizer)
    assert vocab.pad_id == tokenizer.get_special_tokens_dict()["padding_id"]
    pieces = tokenizer.get_vocab()
    assert all(not pieces[i].startswith("▁") for i in vocab.suffix_ids) and len(vocab.suffix_ids) > 100
    text = squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json", max_documents=300)
    documents, empty = tokenize_documents(tokenizer, text)
    reference = transformers.AlbertTokenizerFast.from_pretrained(str(spiece_model.parent))
    expected = [[ids for ids in reference(document, add_special_tokens=False)["input_ids"] if ids]
                for document in text]
    expected = [d for d in expected if d]
    assert [len(d) for d in documents] == [len(d) for d in expected] and empty == 0
    differing = [(ours, theirs) for document, reference_document in zip(documents, expected)
                 for ours, theirs in zip(document, reference_document) if ours != theirs]
    # the known exact ties (docs/python-api.md: "000" as "0" "00" or "00" "0"): the same pieces in another order
    assert len(differing) <= 2 and all(sorted(a) == sorted(b) for a, b in differing), differing

    targets, draws = [], collections.Counter()
    instances = pi.create_instances(documents, MAX_SEQ, SHORT, PROB, MAX_PRED, vocab, random.Random(3), dupe_factor=2,
                                    do_whole_word_mask=True, document_targets=targets, sentence_order=True,
                                    ngram_masking=True, ngram_draws=draws)
    stats = MaskingStatistics(vocab, PROB, MAX_PRED, do_whole_word_mask=True, sentence_order=True, ngram_masking=True)
    stats.update(instances_to_arrays(instances, MAX_SEQ, MAX_PRED))
    stats.update_generation(targets, MAX_SEQ - 3, [i.forced_random_next for i in instances], draws)
    rows = {row["name"]: row for row in stats.comparisons(short_seq_prob=SHORT)}
    assert all(abs(row["z"]) < 4 for row in rows.values()), stats.format_report(SHORT)
    assert stats.counts["count_above"] == 0 and stats.counts["split_words"] == 0

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(document) for document in text[:40]), encoding="utf-8")
    output = tmp_path / "albert.tfrecord"
    config = PretrainingDataConfig(vocab_file=str(spiece_model), max_seq_length=MAX_SEQ,
                                   max_predictions_per_seq=MAX_PRED, dupe_factor=1, do_whole_word_mask=True,
                                   sentence_order=True, ngram_masking=True)
    result = write_pretraining_records([str(corpus)], [str(output)], config, num_workers=0)
    assert result["files"][str(output)] > 50
    record = next(iter(tf.data.TFRecordDataset(str(output))))
    ids = tf.train.Example.FromString(record.numpy()).features.feature["input_ids"].int64_list.value
    assert ids[0] == vocab.cls_id and max(ids) < len(pieces) and np.count_nonzero(np.equal(ids, vocab.sep_id)) == 2
