"""Pre-training TFRecords (Google's format) round trip and tf.data pipelines, static and dynamic masking."""

import math
import random

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data import pretraining_instances as pi
from official_bert.data.pretraining_vocab import MaskingVocab, tokenize_documents
from official_bert.data.dynamic_masking import mask_tokens
from official_bert.data.pretraining_dataset import dynamic_masking_dataset, pretraining_dataset
from official_bert.data.pretraining_records import ShardedRecordWriter, instances_to_arrays, output_paths, \
    serialize_arrays
from official_bert.data.pretraining_stats import MaskingStatistics
from official_bert.data.sentence_corpus import squad_documents, write_documents

MAX_SEQ, MAX_PRED, PROB = 128, 20, 0.15


def _within(hits, n, p, sigmas=4.0):
    observed, sigma = hits / n, math.sqrt(p * (1 - p) / n)
    assert abs(observed - p) <= sigmas * sigma, f"{observed:.4f} vs {p:.4f} +- {sigmas} x {sigma:.4f} (n={n})"


def _numpy(batch):
    return {k: v.numpy() for k, v in batch.items()}


def _concat(batches):
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    from official_bert.text import BertTokenizer

    return BertTokenizer(vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return MaskingVocab.from_tokenizer(tokenizer)


@pytest.fixture(scope="module")
def squad_text(shared_data):
    return squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json", max_documents=400)


@pytest.fixture(scope="module")
def instances(squad_text, tokenizer, vocab):
    documents, _ = tokenize_documents(tokenizer, squad_text[:150])
    return pi.create_instances(documents, MAX_SEQ, 0.1, PROB, MAX_PRED, vocab, random.Random(5))


@pytest.fixture(scope="module")
def record_files(instances, tmp_path_factory):
    paths = output_paths(str(tmp_path_factory.mktemp("records") / "part-*.tfrecord"), 3)
    with ShardedRecordWriter(paths) as writer:
        writer.write(serialize_arrays(instances_to_arrays(instances, MAX_SEQ, MAX_PRED)))
    return paths


def test_records_have_googles_features_and_parse_back(instances, record_files):
    assert [p.rsplit("/", 1)[1] for p in record_files] == [f"part-{i:05d}-of-00003.tfrecord" for i in range(3)]
    # Google's names and types, read without our parser.
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(record_files[0]))).numpy())
    features = example.features.feature
    first = instances[0]
    assert sorted(features) == sorted(["input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                                       "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"])
    assert list(features["input_ids"].int64_list.value) == first.tokens + [0] * (MAX_SEQ - len(first.tokens))
    assert list(features["segment_ids"].int64_list.value)[:len(first.tokens)] == first.segment_ids
    assert sum(features["input_mask"].int64_list.value) == len(first.tokens)
    n = len(first.masked_lm_positions)
    assert list(features["masked_lm_positions"].int64_list.value) == first.masked_lm_positions + [0] * (MAX_PRED - n)
    assert list(features["masked_lm_ids"].int64_list.value) == first.masked_lm_labels + [0] * (MAX_PRED - n)
    assert list(features["masked_lm_weights"].float_list.value) == [1.0] * n + [0.0] * (MAX_PRED - n)
    assert list(features["next_sentence_labels"].int64_list.value) == [int(first.is_random_next)]
    # Through the pipeline: round-robin shards read back in the original order, same arrays.
    dataset = pretraining_dataset(f"{record_files[0].rsplit('/', 1)[0]}/part-*", 32, MAX_SEQ, MAX_PRED,
                                  is_training=False)
    spec = dataset.element_spec
    assert {k: (s.dtype, tuple(s.shape)) for k, s in spec.items()} == {
        "input_word_ids": (tf.int32, (None, MAX_SEQ)), "input_mask": (tf.int32, (None, MAX_SEQ)),
        "input_type_ids": (tf.int32, (None, MAX_SEQ)), "masked_lm_positions": (tf.int32, (None, MAX_PRED)),
        "masked_lm_ids": (tf.int32, (None, MAX_PRED)), "masked_lm_weights": (tf.float32, (None, MAX_PRED)),
        "next_sentence_labels": (tf.int32, (None,))}
    read = _concat([_numpy(b) for b in dataset])
    expected = instances_to_arrays(instances, MAX_SEQ, MAX_PRED)
    for key in expected:
        np.testing.assert_array_equal(read[key], expected[key], err_msg=key)


def test_records_written_by_hand_as_google_does_are_read(tmp_path):
    """A record built the way Google's writer builds it (its own feature construction, not ours)."""
    path = str(tmp_path / "google.tfrecord")

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    ids = [101, 7592, 103, 102, 2088, 102] + [0] * 2
    feature = {"input_ids": ints(ids), "input_mask": ints([1] * 6 + [0] * 2), "segment_ids": ints([0] * 4 + [1] * 2
                                                                                                 + [0] * 2),
               "masked_lm_positions": ints([2, 0, 0]), "masked_lm_ids": ints([2088, 0, 0]),
               "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 0.0, 0.0])),
               "next_sentence_labels": ints([1])}
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    batch = _numpy(next(iter(pretraining_dataset(path, 4, 8, 3, is_training=False))))
    np.testing.assert_array_equal(batch["input_word_ids"], [ids])
    np.testing.assert_array_equal(batch["input_type_ids"], [[0, 0, 0, 0, 1, 1, 0, 0]])
    np.testing.assert_array_equal(batch["masked_lm_ids"], [[2088, 0, 0]])
    np.testing.assert_array_equal(batch["next_sentence_labels"], [1])
    with pytest.raises(ValueError, match=r"google\.tfrecord: feature 'input_ids' .* 8 values; expected .* 16"):
        pretraining_dataset(path, 4, 16, 3, is_training=False)


def test_training_shuffles_repeats_and_drops_the_remainder(instances, record_files):
    total = len(instances)
    ids = {tuple(i.tokens) for i in instances}

    def stream(seed):
        batches = pretraining_dataset(record_files, 50, MAX_SEQ, MAX_PRED, is_training=True, seed=seed,
                                      shuffle_buffer_size=50).take(3 * total // 50)
        return [tuple(row[mask > 0]) for b in batches
                for row, mask in zip(b["input_word_ids"].numpy(), b["input_mask"].numpy())]

    first, again, other = stream(1), stream(1), stream(2)
    assert len(first) > 2 * total and set(first) == ids  # more than two epochs, every instance seen
    assert first == again and first != other
    in_order = [tuple(i.tokens) for i in instances]
    assert first[:total] != in_order and sorted(first[:50]) != sorted(in_order[:50])
    static = pretraining_dataset(record_files, 50, MAX_SEQ, MAX_PRED, is_training=True)
    assert static.element_spec["input_word_ids"].shape == (50, MAX_SEQ)


@pytest.mark.parametrize("num_files", [3, 1])
def test_input_context_shards_without_overlap(instances, record_files, num_files):
    """Three files over two pipelines: by file; one file: by record. Together they read everything once."""
    files = record_files[:num_files]
    expected = [row for row in instances_to_arrays(instances, MAX_SEQ, MAX_PRED)["input_word_ids"]]
    expected = sorted(tuple(r) for i, r in enumerate(expected) if i % 3 < num_files)
    shards = []
    for index in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index, num_replicas_in_sync=2)
        dataset = pretraining_dataset(files, 16, MAX_SEQ, MAX_PRED, is_training=False, input_context=context)
        shards.append([tuple(r) for b in dataset for r in b["input_word_ids"].numpy()])
    assert shards[0] and shards[1]
    assert sorted(shards[0] + shards[1]) == expected


def test_mask_tokens_in_graph(vocab):
    cls, sep, pad = vocab.cls_id, vocab.sep_id, vocab.pad_id
    rows = [[cls] + list(range(2000, 2030)) + [sep] + list(range(3000, 3020)) + [sep],  # 53 tokens -> 8
            [cls, 2000, sep, 2001, sep],  # 5 tokens -> 1
            [cls] + list(range(4000, 4200)) + [sep]]  # 202 tokens -> capped at 20
    seq = 210
    ids = np.array([r + [pad] * (seq - len(r)) for r in rows], np.int32)
    mask = (np.arange(seq)[None, :] < np.array([len(r) for r in rows])[:, None]).astype(np.int32)
    outputs = [_numpy(mask_tokens(tf.constant(ids), tf.constant(mask), tf.constant([s, 0], tf.int64), vocab, PROB,
                                  MAX_PRED)) for s in range(2)]
    for out in outputs:
        real = out["masked_lm_weights"] > 0
        assert real.sum(axis=1).tolist() == [8, 1, 20]
        for b in range(3):
            positions = out["masked_lm_positions"][b][real[b]]
            assert positions.tolist() == sorted(set(positions.tolist()))
            assert not real[b][real[b].sum():].any() and not out["masked_lm_positions"][b][~real[b]].any()
            np.testing.assert_array_equal(out["masked_lm_ids"][b][real[b]], ids[b][positions])
            assert not np.isin(ids[b][positions], [cls, sep, pad]).any()
            unchanged = np.setdiff1d(np.arange(seq), positions)
            np.testing.assert_array_equal(out["input_word_ids"][b][unchanged], ids[b][unchanged])
    assert not np.array_equal(outputs[0]["masked_lm_positions"], outputs[1]["masked_lm_positions"])


@pytest.fixture(scope="module")
def text_file(squad_text, tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "squad.txt"
    write_documents(path, squad_text)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("whole_word", [False, True])
def test_dynamic_masking_statistics_match_the_recipe(text_file, tokenizer, vocab, whole_word):
    dataset = dynamic_masking_dataset(text_file, tokenizer, 64, MAX_SEQ, MAX_PRED, PROB, is_training=True, seed=3,
                                      do_whole_word_mask=whole_word, chunk_chars=200_000)
    assert dataset.element_spec["input_word_ids"].shape == (64, MAX_SEQ)
    stats = MaskingStatistics(vocab, PROB, MAX_PRED, do_whole_word_mask=whole_word)
    for batch in dataset.take(60):
        stats.update(_numpy(batch))
    c = stats.counts
    assert c["instances"] == 3840 and c["special_masked"] == 0 and c["padding_nonzero"] == 0
    if whole_word:
        assert c["split_words"] == 0 and c["count_above"] == 0
    else:
        assert c["count_equal"] == c["instances"]
    v = vocab.vocab_size
    _within(c["mask_token"], c["predictions"], 0.8 + 0.1 / v)
    _within(c["unchanged"], c["predictions"], 0.1 + 0.1 / v)
    _within(c["random_token"], c["predictions"], 0.1 * (1 - 2 / v))


@pytest.mark.slow
def test_dynamic_masking_gives_fresh_masks_each_epoch(squad_text, tokenizer, vocab, tmp_path):
    """Two short sentences per document, no short targets: every chunk splits A|B the same way, so the
    not-random pairs recur every epoch (in a new order) and their masks can be compared."""
    documents = []
    for sentences in squad_text:
        short = [s for s in sentences if len(s.split()) <= 25]
        if len(short) >= 2:
            documents.append(short[:2])
    path = tmp_path / "pairs.txt"
    write_documents(path, documents)
    epochs = []
    dataset = dynamic_masking_dataset(str(path), tokenizer, 1, MAX_SEQ, MAX_PRED, PROB, is_training=True, seed=0,
                                      short_seq_prob=0.0, shuffle_buffer_size=1)
    stream = iter(dataset)
    eval_pairs = [b for b in dynamic_masking_dataset(str(path), tokenizer, 1, MAX_SEQ, MAX_PRED, PROB,
                                                     is_training=False, short_seq_prob=0.0)]
    per_epoch = len(eval_pairs)  # one file, one chunk: the same pairs as training's first epoch
    for _ in range(2):
        epoch = {}
        for _ in range(per_epoch):
            b = _numpy(next(stream))
            ids = b["input_word_ids"][0].copy()
            real = b["masked_lm_weights"][0] > 0
            positions = b["masked_lm_positions"][0][real]
            ids[positions] = b["masked_lm_ids"][0][real]
            key = tuple(ids[b["input_mask"][0] > 0])
            epoch[key] = (tuple(positions), int(b["next_sentence_labels"][0]))
        epochs.append(epoch)
    assert len(epochs[0]) == per_epoch > 200
    # Per document, a fair coin: heads, one pair "s1 | s2" (label 0); tails, "s1 | random" and then s2, left
    # over, alone in its chunk, which always gets a random B. So 2 of 3 pairs are random on average.
    labels = [label for epoch in epochs for _, label in epoch.values()]
    _within(sum(labels), len(labels), 2 / 3)
    _within(per_epoch - len(documents), len(documents), 0.5)  # tails: one extra pair
    common = [k for k in epochs[0] if k in epochs[1] and epochs[0][k][1] == 0]
    assert len(common) > 50
    same = sum(epochs[0][k][0] == epochs[1][k][0] for k in common)
    assert same <= 2, f"{same} of {len(common)} recurring pairs got the same masked positions in both epochs"


@pytest.mark.parametrize("num_files", [2, 1])
def test_dynamic_masking_shards_over_input_pipelines(tokenizer, vocab, tmp_path, num_files):
    """Two files over two pipelines: one file each; one file: alternate documents. Nothing read twice."""
    words = [["apple", "banana", "cherry", "grape"], ["dog", "eagle", "fox", "horse"]]
    paths = []
    for f in range(2):
        documents = [[f"{words[f][(d + s) % 4]} {words[f][s % 4]} {d}" for s in range(3)] for d in range(20)]
        paths.append(tmp_path / f"{f}.txt")
        write_documents(paths[-1], documents)
    if num_files == 1:
        paths = [tmp_path / "both.txt"]
        paths[0].write_text((tmp_path / "0.txt").read_text() + (tmp_path / "1.txt").read_text())
    seen = []
    for index in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index, num_replicas_in_sync=2)
        dataset = dynamic_masking_dataset([str(p) for p in paths], tokenizer, 8, 32, 5, is_training=False,
                                          short_seq_prob=0.0, input_context=context)
        words_seen = set()
        for b in map(_numpy, dataset):
            ids = b["input_word_ids"].copy()
            rows = np.arange(len(ids))[:, None]
            ids[rows, b["masked_lm_positions"]] = np.where(b["masked_lm_weights"] > 0, b["masked_lm_ids"],
                                                           ids[rows, b["masked_lm_positions"]])
            words_seen |= set(ids[b["input_mask"] > 0].tolist())
        seen.append(words_seen - {vocab.cls_id, vocab.sep_id})
    fruit = set(tokenizer(np.array([" ".join(words[0])])).to_list()[0])
    animals = set(tokenizer(np.array([" ".join(words[1])])).to_list()[0])
    if num_files == 2:  # file 0 to pipeline 0, file 1 to pipeline 1 (random next stays within a pipeline)
        assert fruit <= seen[0] and not animals & seen[0] and animals <= seen[1] and not fruit & seen[1]
    else:  # documents alternate: the digits of even documents go to pipeline 0, odd ones to pipeline 1
        numbers = [set(tokenizer(np.array([str(d) for d in range(0, 20, 2)])).flat_values.numpy().tolist()),
                   set(tokenizer(np.array([str(d) for d in range(1, 20, 2)])).flat_values.numpy().tolist())]
        assert numbers[0] <= seen[0] and numbers[1] <= seen[1]
        assert not (numbers[1] - numbers[0]) & seen[0] and not (numbers[0] - numbers[1]) & seen[1]


@pytest.mark.skipif(not tf.io.gfile.exists("/proc/version"), reason="needs Linux's /proc")
def test_a_shard_that_cannot_be_written_is_named_and_no_shard_is_left(tmp_path):
    paths = [str(tmp_path / "a.tfrecord"), "/proc/b.tfrecord"]  # the second one: /proc takes no new files
    with pytest.raises(ValueError, match=r"^output file /proc/b\.tfrecord cannot be written \(.*No such file or "
                                         r"directory\); choose another --output_file$"):
        ShardedRecordWriter(paths)
    assert not list(tmp_path.iterdir())  # the first shard's .incomplete file is gone


@pytest.fixture
def small_text_file(tmp_path):
    """Two documents of five sentences: far fewer instances than a shuffle buffer holds."""
    path = tmp_path / "small.txt"
    write_documents(path, [["The cat sat on the mat.", "It purred."], ["A dog ran.", "It barked.", "Nobody came."]])
    return path


def test_dynamic_masking_fills_its_shuffle_buffer_within_an_epoch(tokenizer, monkeypatch, small_text_file):
    """A file far smaller than the shuffle buffer (10,000 instances): the first batch comes after reading it a few
    times, not the thousands of epochs a buffer over the endless stream filled first (7 s of tokenizing)."""
    from official_bert.data import dynamic_masking

    epochs = []
    read = dynamic_masking.document_chunks
    monkeypatch.setattr(dynamic_masking, "document_chunks", lambda *args: epochs.append(1) or read(*args))
    dataset = dynamic_masking_dataset(str(small_text_file), tokenizer, 2, 32, 3, PROB, is_training=True, seed=0)
    batch = _numpy(next(iter(dataset)))
    assert batch["input_word_ids"].shape == (2, 32)
    assert 1 <= len(epochs) <= 5, len(epochs)  # 3,160 before


def test_dynamic_masking_trains_under_a_global_seed_of_0(tokenizer, small_text_file):
    """`--seed=0` sets TensorFlow's global seed to 0; a shuffle seed computed from the epoch tensor then failed
    ("Using a symbolic tf.Tensor as a Python bool") before the first batch."""
    import keras

    keras.utils.set_random_seed(0)
    dataset = dynamic_masking_dataset(str(small_text_file), tokenizer, 2, 32, 3, PROB, is_training=True, seed=0)
    batches = [_numpy(batch) for batch in dataset.take(4)]  # across epochs (about 2 instances an epoch)
    assert all(batch["input_word_ids"].shape == (2, 32) for batch in batches)


def test_dynamic_masking_warns_once_with_a_count_of_the_sentences_longer_than_a_sequence(tokenizer, tmp_path,
                                                                                       caplog):
    """A line of 40 words cannot fit a sequence of 32 (29 pieces): it is cut in every pair, which is said once
    with the count, not once per chunk and epoch."""
    path = tmp_path / "long.txt"
    long_line = " ".join(["word"] * 40)
    write_documents(path, [["The cat sat on the mat.", long_line], ["A dog ran.", "It barked.", long_line]])
    dataset = dynamic_masking_dataset(str(path), tokenizer, 2, 32, 3, PROB, is_training=True, seed=0)
    with caplog.at_level("WARNING", logger="official_bert.data.dynamic_masking"):
        batches = [_numpy(batch) for batch in dataset.take(6)]  # several epochs of the one chunk
    assert all(batch["input_mask"].sum(axis=1).max() <= 32 for batch in batches)
    warnings = [r.getMessage() for r in caplog.records if "longer than a sequence" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("2 of 5 sentences (lines)") and "at least 22 of their pieces" in warnings[0]
