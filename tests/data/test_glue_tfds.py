"""GLUE from tensorflow-datasets: datasets prepared offline by TFDS's own GLUE code from small TSV files read
like the TSV reader reads them, labels in our order, and a clear error for an unprepared dataset."""

import numpy as np
import pytest

from glue_files import MNLI_TEST_HEADER, MNLI_TRAIN_HEADER, mnli_row, write_tsv
from official_bert.data import GLUE_TASKS, examples_from_tfds, load_tfds_glue, read_glue_tsv


def _prepare_tfds(tmp_path, config, split_files):
    """Builds a real TFDS `glue/<config>` dataset offline from local TSV files, with TFDS's own GLUE code."""
    import tensorflow_datasets as tfds
    from tensorflow_datasets.text import glue as tfds_glue

    class LocalGlue(tfds_glue.Glue, skip_registration=True):
        name = "glue"

        def _split_generators(self, dl_manager):
            return [tfds.core.SplitGenerator(name=tfds_split, gen_kwargs={"data_file": path, "split": kind})
                    for tfds_split, (path, kind) in split_files.items()]

    tfds.disable_progress_bar()
    data_dir = str(tmp_path / "tfds")
    LocalGlue(config=config, data_dir=data_dir).download_and_prepare()
    return data_dir


def _sorted_by_id(examples):
    order = np.argsort(examples.ids)
    b = None if examples.text_b is None else [examples.text_b[i] for i in order]
    labels = None if examples.labels is None else examples.labels[order]
    return examples.ids[order], [examples.text_a[i] for i in order], b, labels


def _assert_same_examples(ours, theirs):
    for mine, other in zip(_sorted_by_id(ours), _sorted_by_id(theirs)):
        if isinstance(mine, np.ndarray):
            np.testing.assert_array_equal(mine, other)
        else:
            assert mine == other


def test_tfds_mnli_matches_the_tsv_reader(tmp_path):
    rows = [mnli_row(i, f"premise {i}", f"hypothesis {i}", [g, g])
            for i, g in enumerate(["entailment", "neutral", "contradiction", "neutral", "entailment"])]
    train = write_tsv(tmp_path, "train.tsv", [MNLI_TRAIN_HEADER] + rows)
    dev = write_tsv(tmp_path, "dev_mismatched.tsv", [MNLI_TRAIN_HEADER] + rows[:3])
    test = write_tsv(tmp_path, "test_matched.tsv", [MNLI_TEST_HEADER] + [mnli_row(0, "p", "h", [])])
    data_dir = _prepare_tfds(tmp_path, "mnli", {"train": (train, "train"), "validation_mismatched": (dev, "dev"),
                                                "test_matched": (test, "test")})
    tfds_train = load_tfds_glue("MNLI", "train", data_dir=data_dir)
    assert tfds_train.source == "glue/mnli[train]" and len(tfds_train) == 5
    # TFDS numbers labels entailment, neutral, contradiction; ours follow google-research/bert.
    _assert_same_examples(read_glue_tsv("MNLI", train, "train"), tfds_train)
    _assert_same_examples(read_glue_tsv("MNLI", dev, "dev_mismatched"),
                          load_tfds_glue("mnli", "validation_mismatched", data_dir=data_dir))
    tfds_test = load_tfds_glue("MNLI", "test_matched", data_dir=data_dir)
    assert tfds_test.labels is None and tfds_test.text_b == ["h"]


def test_tfds_stsb_and_cola_match_the_tsv_reader(tmp_path):
    stsb_header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    stsb = write_tsv(tmp_path, "stsb.tsv", [stsb_header] + [f"{i}\tg\tf\ty\t{i}\ts\ts\tA {i}.\tB {i}.\t{i * 1.25}"
                                                         for i in range(5)])
    cola = write_tsv(tmp_path, "cola.tsv", [f"src\t{i % 2}\t{'' if i % 2 else '*'}\tSentence {i}." for i in range(6)])
    stsb_dir = _prepare_tfds(tmp_path / "s", "stsb", {"train": (stsb, "train")})
    cola_dir = _prepare_tfds(tmp_path / "c", "cola", {"validation": (cola, "dev")})
    tfds_stsb = load_tfds_glue("STS-B", "train", data_dir=stsb_dir)
    assert tfds_stsb.labels.dtype == np.float32 and sorted(tfds_stsb.text_b) == [f"B {i}." for i in range(5)]
    _assert_same_examples(read_glue_tsv("STS-B", stsb, "train"), tfds_stsb)
    _assert_same_examples(read_glue_tsv("COLA", cola, "dev"), load_tfds_glue("cola", "dev", data_dir=cola_dir))


def test_tfds_missing_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"glue/mrpc is not prepared in .*--data_dir"):
        load_tfds_glue("MRPC", "dev", data_dir=str(tmp_path))


def test_examples_from_tfds_records():
    records = [{"premise": b"P0", "hypothesis": b"H0", "label": np.int64(2), "idx": np.int32(10)},
               {"premise": "P1", "hypothesis": "H1", "label": np.int64(0), "idx": np.int32(11)}]
    examples = examples_from_tfds("MNLI", "validation_matched", records,
                                  label_names=["entailment", "neutral", "contradiction"])
    names = GLUE_TASKS["MNLI"].label_names
    assert examples.split == "dev_matched" and examples.text_a == ["P0", "P1"] and examples.text_b == ["H0", "H1"]
    assert [names[i] for i in examples.labels] == ["contradiction", "entailment"] and list(examples.ids) == [10, 11]
    with pytest.raises(ValueError, match="label -1 is not a SST-2 class index"):
        examples_from_tfds("SST-2", "train", [{"sentence": b"x", "label": -1, "idx": 0}])
    assert examples_from_tfds("SST-2", "test", [{"sentence": b"x", "label": -1, "idx": 0}]).labels is None
    with pytest.raises(ValueError, match="2 label names"):
        examples_from_tfds("MNLI", "train", records, label_names=["a", "b"])
