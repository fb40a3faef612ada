"""tasks.create_pretraining_data end to end on SQuAD contexts: two worker processes, sharded outputs, the recipe's
statistics on the written records, the same bytes from one process, and no overwriting. Its command lines run as
children of one process (`forked_commands`): TensorFlow is imported once."""

import logging
import math
import pathlib

import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked

from official_bert.data.pretraining_dataset import pretraining_dataset
from official_bert.data.pretraining_vocab import MaskingVocab
from official_bert.data.pretraining_records import output_paths
from official_bert.data.pretraining_stats import MaskingStatistics
from official_bert.data.pretraining_writer import PretrainingDataConfig, write_pretraining_records
from official_bert.data.sentence_corpus import squad_documents, write_documents

pytestmark = pytest.mark.slow
RECIPE = dict(max_seq_length=128, max_predictions_per_seq=20, masked_lm_prob=0.15, short_seq_prob=0.1, dupe_factor=2,
              random_seed=99, chunk_chars=60_000)


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory):
    """Two text files of 150 SQuAD paragraphs each (a document per paragraph): ~1,200 instances at dupe_factor 2."""
    root = tmp_path_factory.mktemp("corpus")
    documents = squad_documents(shared_data / "squad" / "v1.1" / "dev-v1.1.json", max_documents=300)
    write_documents(root / "part-a.txt", documents[:150])
    write_documents(root / "part-b.txt", documents[150:])
    return root


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")


def _refusals():
    """(corpus bytes, output, message) of each command line refused in one line."""
    cases = [(b"A sentence.\ncaf\xe9 au lait.\n", "out.tfrecord",
              "{tmp}/corpus.txt:2: not UTF-8 text (byte 0xe9 at column 4); save the file as UTF-8"),
             (b"A sentence.\nAnother one.\n", "notes.txt/out.tfrecord",
              "--output_file={tmp}/notes.txt/out.tfrecord-00000-of-00002 cannot be written: {tmp}/notes.txt is a file, "
              "not a folder")]
    if pathlib.Path("/proc/version").is_file():  # Linux's /proc
        cases.append((b"A sentence.\nAnother one.\n", "/proc/out.tfrecord",
                      "--output_file=/proc/out.tfrecord-00000-of-00002 cannot be written: No such file or directory "
                      "(the folder /proc takes no new files)"))
    return cases


REFUSALS = _refusals()


@pytest.fixture(scope="module")
def runs(corpus, vocab_file, tmp_path_factory):
    """(root, [CompletedProcess]): the two-worker run writing `root/cli/squad-*.tfrecord`, then one refused command
    line per `REFUSALS` case, each in `root/refused<i>`."""
    root = tmp_path_factory.mktemp("cli")
    flags = [f"--{k}={v}" for k, v in RECIPE.items()]
    commands = [[f"--input_file={corpus}/part-a.txt,{corpus}/part-b*.txt", f"--output_file={root}/cli/squad-*.tfrecord",
                 f"--vocab_file={vocab_file}", "--num_output_shards=3", *flags, "--num_workers=2"]]
    for i, (corpus_bytes, output, _) in enumerate(REFUSALS):
        tmp = root / f"refused{i}"
        tmp.mkdir()
        (tmp / "corpus.txt").write_bytes(corpus_bytes)
        (tmp / "notes.txt").write_text("mine\n")
        commands.append([f"--input_file={tmp / 'corpus.txt'}", f"--output_file={tmp / output}",
                         f"--vocab_file={vocab_file}", "--num_output_shards=2", "--num_workers=0", "--dupe_factor=1"])
    (root / "out").mkdir()
    return root, run_forked([("tasks.create_pretraining_data", args) for args in commands], root / "out")


def test_cli_two_workers_matches_one_process_and_the_recipe(corpus, vocab_file, runs, tmp_path):
    root, (result, *_) = runs
    assert result.returncode == 0, result.stderr[-3000:]
    files = sorted((root / "cli").iterdir())
    assert [f.name for f in files] == [f"squad-{i:05d}-of-00003.tfrecord" for i in range(3)]
    assert "documents: 300," in result.stdout and "masked fraction" in result.stdout

    # The same bytes from one process: the output depends on the seed and the chunking, not on the workers.
    config = PretrainingDataConfig(vocab_file=vocab_file, **RECIPE)
    local = write_pretraining_records([f"{corpus}/part-a.txt", f"{corpus}/part-b.txt"],
                                      output_paths(str(tmp_path / "local" / "squad"), 3), config, num_workers=1)
    assert [pathlib.Path(p).read_bytes() for p in local["files"]] == [f.read_bytes() for f in files]
    instances = local["statistics"].counts["instances"]
    assert f"instances: {instances}," in result.stdout and instances > 1000
    assert local["documents"] == 300 and local["statistics"].counts["document_passes"] == 600

    # The recipe, measured on the records as run_pretraining reads them.
    from official_bert.text.vocab import load_vocab

    vocab = MaskingVocab.from_tokens(load_vocab(vocab_file))
    stats = MaskingStatistics(vocab, 0.15, 20)
    for batch in pretraining_dataset(f"{root}/cli/squad-*.tfrecord", 256, 128, 20, is_training=False):
        stats.update({k: v.numpy() for k, v in batch.items()})
    c = stats.counts
    assert c["instances"] == instances and c["count_equal"] == instances and c["special_masked"] == 0
    for name, hits, p in (("[MASK]", c["mask_token"], 0.8), ("unchanged", c["unchanged"], 0.1),
                          ("random", c["random_token"], 0.1)):
        n = c["predictions"]
        assert abs(hits / n - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-4, name
    # NSP (a fair coin, but single-sentence chunks always random) and short targets (once per document),
    # from the writer's own count of those cases.
    rows = {r["name"]: r for r in local["statistics"].comparisons(short_seq_prob=0.1)}
    coin = rows["random next (NSP), coin-flip pairs"]
    forced = local["statistics"].counts["forced_random_next"]
    assert coin["n"] == instances - forced and coin["observed"] == (c["random_next"] - forced) / coin["n"]
    assert abs(coin["z"]) <= 4 and abs(rows["documents with a short target"]["z"]) <= 4

    # Existing outputs are never overwritten (the check the CLI runs before reading anything).
    before = [f.read_bytes() for f in files]
    with pytest.raises(FileExistsError, match="squad-00000-of-00003.tfrecord already exists"):
        write_pretraining_records([f"{corpus}/part-a.txt"], [str(tmp_path / "new.tfrecord")] + [str(f) for f in files],
                                  config, num_workers=0)
    assert [f.read_bytes() for f in files] == before
    assert not list(tmp_path.glob("*/*.incomplete")) and not list(tmp_path.glob("new*"))
    assert not list(root.glob("cli/*.incomplete"))


def test_whole_word_masking_and_bad_input(corpus, vocab_file, tmp_path):
    config = PretrainingDataConfig(vocab_file=vocab_file, **{**RECIPE, "do_whole_word_mask": True, "dupe_factor": 1})
    result = write_pretraining_records([f"{corpus}/part-a.txt"], [str(tmp_path / "wwm.tfrecord")], config,
                                       num_workers=0)
    stats = result["statistics"]
    assert stats.counts["split_words"] == 0 and stats.counts["count_above"] == 0
    assert stats.counts["instances"] > 300
    rows = sum(len(b["input_word_ids"]) for b in pretraining_dataset(str(tmp_path / "wwm.tfrecord"), 64, 128, 20,
                                                                      is_training=False))
    assert rows == stats.counts["instances"]

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"A sentence.\n\xc3\x28 broken\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: not UTF-8"):
        write_pretraining_records([str(bad)], [str(tmp_path / "bad.tfrecord")], config, num_workers=0)
    assert not list(tmp_path.glob("bad.tfrecord*"))  # nothing half-written left behind
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="no instance could be built"):
        write_pretraining_records([str(empty)], [str(tmp_path / "empty.tfrecord")], config, num_workers=0)
    with pytest.raises(ValueError, match="num_output_shards=2"):
        output_paths("a.tfrecord,b.tfrecord,c.tfrecord", 2)
    assert np.array_equal(output_paths("x", 2), ["x-00000-of-00002", "x-00001-of-00002"])


def test_sentences_longer_than_a_sequence_are_counted_in_a_warning(vocab_file, tmp_path, caplog):
    """A line of 200 words at max_seq_length 32 (29 pieces a pair) loses at least 171 pieces in each pass."""
    corpus = tmp_path / "long.txt"
    corpus.write_text("A short sentence.\n" + " ".join(["word"] * 200) + "\nAnother one.\n\nA second document.\n")
    config = PretrainingDataConfig(vocab_file=vocab_file, max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1)
    with caplog.at_level(logging.WARNING, logger="official_bert.data.pretraining_writer"):
        result = write_pretraining_records([str(corpus)], [str(tmp_path / "long.tfrecord")], config, num_workers=0)
    assert result["statistics"].counts["long_sentences"] == 1
    assert ("1 of 4 sentences (lines) are longer than a sequence (29 pieces with --max_seq_length=32): at least 171 "
            "of their pieces are cut, in every pass; put one sentence a line") in caplog.text


@pytest.mark.parametrize("index", range(len(REFUSALS)))
def test_a_corpus_that_is_not_utf8_or_an_output_that_cannot_be_written_is_one_line(runs, index):
    root, results = runs
    tmp, result, message = root / f"refused{index}", results[1 + index], REFUSALS[index][2]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == "error: " + message.format(tmp=tmp)
    assert (tmp / "notes.txt").read_text() == "mine\n" and not list(tmp.glob("out.tfrecord*"))
