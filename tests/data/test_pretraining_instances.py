"""The pre-training recipe, checked by statistics over a few thousand instances built from SQuAD contexts.

Each check is the recipe's rule (Devlin et al. 2019, Google's create_pretraining_data.py) restated in the test:
exact where the rule is exact, and within 4 binomial standard errors where it is a probability.
"""

import math
import random

import numpy as np
import pytest
from scipy import stats

from official_bert.data import pretraining_instances as pi
from official_bert.data.pretraining_masking import create_masked_lm_predictions
from official_bert.data.pretraining_vocab import MaskingVocab, tokenize_documents
from official_bert.data.pretraining_records import instances_to_arrays
from official_bert.data.pretraining_stats import MaskingStatistics
from official_bert.data import sentence_corpus as sc
from official_bert.data.sentence_corpus import split_sentences, squad_documents

MAX_SEQ, MAX_PRED, PROB, SHORT = 128, 20, 0.15, 0.1


def _within(hits, n, p, sigmas=4.0):
    observed, sigma = hits / n, math.sqrt(p * (1 - p) / n)
    assert abs(observed - p) <= sigmas * sigma, f"{observed:.4f} vs {p:.4f} +- {sigmas} x {sigma:.4f} (n={n})"


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    from official_bert.text import BertTokenizer

    return BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return MaskingVocab.from_tokenizer(tokenizer)


@pytest.fixture(scope="module")
def documents(shared_data, tokenizer):
    """600 SQuAD paragraphs, one document each, tokenized: about 1,000 instances per pass at length 128."""
    text = squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json", max_documents=600)
    tokenized, empty = tokenize_documents(tokenizer, text)
    assert empty == 0 and len(tokenized) == 600
    return tokenized


@pytest.fixture(scope="module")
def pairs_and_instances(documents, vocab):
    """Three passes: every pair with its masked instance and the (pass, document) it came from."""
    rng = random.Random(7)
    rows, targets = [], []
    for _ in range(3):
        for index in range(len(documents)):
            pairs = pi.create_sentence_pairs(documents, index, MAX_SEQ, SHORT, vocab, rng)
            targets.append(pairs[0].target_seq_length)
            assert len({p.target_seq_length for p in pairs}) == 1  # one target per document, as the original
            rows += [(index, p, pi.mask_pair(p, PROB, MAX_PRED, vocab, rng)) for p in pairs]
    return rows, targets


def test_split_sentences_and_squad_documents(shared_data):
    text = 'He said "Stop." Then he left! Was it 5 p.m.? 42 people (mostly staff) stayed. e.g. this stays'
    assert split_sentences(text) == ['He said "Stop."', "Then he left!", "Was it 5 p.m.?",
                                      "42 people (mostly staff) stayed. e.g. this stays"]
    docs = squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json")
    assert len(docs) == 2067  # every paragraph of SQuAD v1.1 dev
    assert docs[0][0].startswith("Super Bowl 50 was an American football game")


def test_read_documents_and_chunks(tmp_path):
    (tmp_path / "a.txt").write_text("s1\ns2\n\n\n  \ns3\n\ns4\ns5")  # runs of blank lines, no final newline
    (tmp_path / "b.txt").write_text("t1\r\nt2\r\n")  # the end of a file ends its document
    (tmp_path / "c.txt").write_text("u1\n\nu2\n")
    files = sc.expand_file_patterns(f"{tmp_path}/[ab].txt, {tmp_path}/c.txt,{tmp_path}/a.txt")
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.txt", "b.txt", "c.txt"]
    docs = list(sc.read_documents(files))
    assert docs == [["s1", "s2"], ["s3"], ["s4", "s5"], ["t1", "t2"], ["u1"], ["u2"]]
    chunks = list(sc.document_chunks(files, chunk_chars=4))
    assert [d for c in chunks for d in c] == docs and all(len(c) >= 2 for c in chunks)
    assert [len(c) for c in chunks] == [2, 2, 2]
    shards = [[d for c in sc.document_chunks(files, 100, 2, i) for d in c] for i in range(2)]
    assert shards == [docs[0::2], docs[1::2]]
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        sc.expand_file_patterns(f"{tmp_path}/a.txt,{tmp_path}/nothing-here*.txt")


def test_bad_input_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: not UTF-8"):
        list(sc.read_documents([str(bad)]))


def test_tokenize_documents_batches_and_drops_empty_sentences(tokenizer):
    docs = [["Hello world!", "\x01\x02"], ["\x03"], ["Good morning.", "Bye"]]
    tokenized, empty = tokenize_documents(tokenizer, docs, batch_size=2)
    expected = [[tokenizer(np.array([s])).to_list()[0]] for s in ("Hello world!",)]
    expected.append([tokenizer(np.array([s])).to_list()[0] for s in ("Good morning.", "Bye")])
    assert tokenized == expected and empty == 2  # the control-character lines give no tokens: dropped


def test_pairs_follow_the_recipe(pairs_and_instances, documents, vocab):
    rows, targets = pairs_and_instances
    assert len(rows) > 3000
    # Where each token sequence can come from: the documents' token streams, one string each.
    streams = [" " + " ".join(str(t) for s in d for t in s) + " " for d in documents]
    checked_sources = 0
    for doc_index, pair, _ in rows:
        tokens, segments = pair.tokens, pair.segment_ids
        assert len(tokens) <= MAX_SEQ and len(segments) == len(tokens)
        sep = [i for i, s in enumerate(segments) if s == 0][-1]
        assert tokens[0] == vocab.cls_id and tokens[sep] == vocab.sep_id and tokens[-1] == vocab.sep_id
        assert segments == [0] * (sep + 1) + [1] * (len(tokens) - sep - 1)
        a, b = tokens[1:sep], tokens[sep + 1:-1]
        assert a and b and vocab.sep_id not in a + b
        if checked_sources < 400:  # A is a span of its document; B a span of it (after A) or of another one
            checked_sources += 1
            span = lambda ids: " " + " ".join(map(str, ids)) + " "  # noqa: E731
            assert span(a) in streams[doc_index]
            if pair.is_random_next:
                assert any(span(b) in s for i, s in enumerate(streams) if i != doc_index)
            else:  # B follows A in the document (truncation may have cut A's end and B's start)
                stream, span_a = streams[doc_index], span(a)
                assert stream.find(span(b), stream.index(span_a) + len(span_a) - 1) >= 0
    # NSP: a fair coin unless the chunk held one sentence (then B is always random).
    forced = [p for _, p, _ in rows if p.forced_random_next]
    free = [p for _, p, _ in rows if not p.forced_random_next]
    assert all(p.is_random_next for p in forced) and len(free) > 2000
    _within(sum(p.is_random_next for p in free), len(free), 0.5)
    # Target lengths: drawn once per document; short (uniform in [2, 125]) with probability short_seq_prob.
    short = [t for t in targets if t < MAX_SEQ - 3]
    _within(len(short), len(targets), SHORT)
    assert all(2 <= t <= MAX_SEQ - 3 for t in targets)
    # Uniform on the integers 2..125: (t - 2 + U(0, 1)) / 124 is uniform on (0, 1).
    jitter = np.random.default_rng(0).uniform(size=len(short))
    assert stats.kstest((np.array(short) - 2 + jitter) / (MAX_SEQ - 4), "uniform").pvalue > 1e-4
    # Full-length targets fill the sequence unless the document runs out: most such pairs have 125 tokens.
    full = [len(p.tokens) for _, p, _ in rows if p.target_seq_length == MAX_SEQ - 3]
    assert max(full) == MAX_SEQ and np.mean(np.array(full) == MAX_SEQ) > 0.3


def test_masked_lm_predictions_follow_the_recipe(pairs_and_instances, vocab):
    rows, _ = pairs_and_instances
    outcome = {"mask": 0, "keep": 0, "random": 0}
    random_ids = []
    for _, pair, instance in rows:
        original, output, positions = pair.tokens, instance.tokens, instance.masked_lm_positions
        expected = min(MAX_PRED, max(1, int(round(len(original) * PROB))))
        assert len(positions) == expected == len(set(positions)) and positions == sorted(positions)
        assert instance.masked_lm_labels == [original[p] for p in positions]
        assert all(original[p] not in (vocab.cls_id, vocab.sep_id) for p in positions)
        assert all(output[i] == original[i] for i in range(len(original)) if i not in set(positions))
        for p in positions:
            if output[p] == vocab.mask_id:
                outcome["mask"] += 1
            elif output[p] == original[p]:
                outcome["keep"] += 1
            else:
                outcome["random"] += 1
                random_ids.append(output[p])
    n, v = sum(outcome.values()), vocab.vocab_size
    _within(outcome["mask"], n, 0.8 + 0.1 / v)
    _within(outcome["keep"], n, 0.1 + 0.1 / v)
    _within(outcome["random"], n, 0.1 * (1 - 2 / v))
    # Random replacements are uniform over the whole vocabulary: mean (V-1)/2, sd V/sqrt(12).
    assert abs(np.mean(random_ids) - (v - 1) / 2) <= 4 * v / math.sqrt(12 * len(random_ids))
    # The statistics class counts the same from the padded arrays.
    stats = MaskingStatistics(vocab, PROB, MAX_PRED)
    stats.update(instances_to_arrays([i for _, _, i in rows], MAX_SEQ, MAX_PRED))
    c = stats.counts
    assert (c["mask_token"], c["unchanged"], c["random_token"]) == (outcome["mask"], outcome["keep"],
                                                                    outcome["random"])
    assert c["count_equal"] == len(rows) and c["special_masked"] == 0 and c["padding_nonzero"] == 0
    assert c["split_words"] > 100  # token-level masking splits words; the whole-word check below sees it


def test_whole_word_masking_never_masks_part_of_a_word(pairs_and_instances, vocab):
    rows, _ = pairs_and_instances
    rng = random.Random(11)
    outcome = {"mask": 0, "other": 0}
    short = 0
    for _, pair, _ in rows:
        tokens, positions, labels = create_masked_lm_predictions(pair.tokens, PROB, MAX_PRED, vocab, rng,
                                                                    do_whole_word_mask=True)
        chosen = set(positions)
        special = {vocab.cls_id, vocab.sep_id}
        words, current = [], []
        for i, t in enumerate(pair.tokens):  # whole words: a piece and the ## pieces right after it
            if t in special:
                words, current = words + [current] if current else words, []
            elif t in vocab.suffix_ids and current:
                current.append(i)
            else:
                words, current = words + [current] if current else words, [i]
        words.append(current)
        for word in words:
            assert len(chosen.intersection(word)) in (0, len(word)), (word, positions)
        expected = min(MAX_PRED, max(1, int(round(len(pair.tokens) * PROB))))
        longest = max(len(w) for w in words)
        assert expected - longest < len(positions) <= expected
        short += len(positions) < expected
        assert labels == [pair.tokens[p] for p in positions]
        outcome["mask"] += sum(tokens[p] == vocab.mask_id for p in positions)
        outcome["other"] += sum(tokens[p] != vocab.mask_id for p in positions)
    _within(outcome["mask"], outcome["mask"] + outcome["other"], 0.8 + 0.1 / vocab.vocab_size)
    assert short < len(rows) * 0.05  # words that would overshoot are skipped, but smaller ones fill the gap


def test_masking_count_rule_edges(vocab):
    rng = random.Random(0)
    cls, sep = vocab.cls_id, vocab.sep_id
    five = [cls, 2000, sep, 2001, sep]  # 5 x 0.15 = 0.75 -> 1
    assert len(create_masked_lm_predictions(five, 0.15, 20, vocab, rng)[1]) == 1
    ten = [cls] + list(range(2000, 2007)) + [sep, sep]  # 10 x 0.25 = 2.5 -> 2 (round half to even)
    assert len(create_masked_lm_predictions(ten, 0.25, 20, vocab, rng)[1]) == 2
    long = [cls] + list(range(2000, 2200)) + [sep]  # 202 x 0.5 = 101 -> capped at 20
    assert len(create_masked_lm_predictions(long, 0.5, 20, vocab, rng)[1]) == 20


def test_truncate_seq_pair_trims_the_longer_from_either_end():
    fronts = 0
    for seed in range(400):
        a, b = list(range(10)), list(range(100, 104))
        pi.truncate_seq_pair(a, b, 12, random.Random(seed))
        assert len(a) == 8 and b == list(range(100, 104))  # only the longer one was trimmed
        assert a == list(range(a[0], a[0] + 8))  # what is left is contiguous
        fronts += a[0]  # tokens removed from the front (of 2)
    _within(fronts, 800, 0.5)
    a, b = [1, 2, 3], [4, 5, 6]
    pi.truncate_seq_pair(a, b, 4, random.Random(0))  # ties trim B first, then the longer
    assert len(a) == 2 and len(b) == 2


def test_random_next_comes_from_another_document(vocab):
    docs = [[[2000 + d * 10 + s] * 3 for s in range(4)] for d in range(3)]
    rng = random.Random(3)
    for _ in range(200):
        for pair in pi.create_sentence_pairs(docs, 1, 20, 0.0, vocab, rng):
            if pair.is_random_next:
                b = pair.tokens[pair.segment_ids.index(1):-1]
                assert all(t // 10 != 201 for t in b)  # not document 1
    single = pi.create_sentence_pairs(docs[:1], 0, 20, 0.0, vocab, rng)  # one document: B from itself
    assert single and all(2000 <= t < 2010 for p in single for t in p.tokens[1:-1] if t != vocab.sep_id)


def test_create_instances_is_deterministic_per_seed(documents, vocab):
    def run(seed):
        return pi.create_instances(documents[:50], MAX_SEQ, SHORT, PROB, MAX_PRED, vocab, pi.chunk_rng(seed, 0),
                                   dupe_factor=2)

    first, again, other = run(1), run(1), run(2)
    assert [i.tokens for i in first] == [i.tokens for i in again]
    assert [i.tokens for i in first] != [i.tokens for i in other]
    with pytest.raises(ValueError, match="max_predictions_per_seq=200"):
        pi.create_instances(documents[:2], 128, 0.1, 0.15, 200, vocab, random.Random(0))
