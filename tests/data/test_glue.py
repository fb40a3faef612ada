"""GLUE TSV reader: real GLUE files from ../shared/data, hand-written layouts and errors, the task table."""

import csv
import logging

import numpy as np
import pytest

from glue_files import MNLI_DEV_HEADER, MNLI_TEST_HEADER, MNLI_TRAIN_HEADER, mnli_row, write_tsv
from official_bert.data import GLUE_TASKS, GlueTask, get_glue_task, glue_file_path, read_glue_tsv

# (task, file under glue/, split, rows): counts from ../shared/data/SOURCES.md (WNLI counted here).
REAL_FILES = [
    ("SST-2", "SST-2/train.tsv", "train", 67349),
    ("SST-2", "SST-2/dev.tsv", "dev", 872),
    ("SST-2", "SST-2/test.tsv", "test", 1821),
    ("MRPC", "MRPC/train.tsv", "train", 3668),
    ("MRPC", "MRPC/dev.tsv", "dev", 408),
    ("MRPC", "MRPC/test.tsv", "test", 1725),
    ("COLA", "CoLA/dev.tsv", "dev", 1043),
    ("COLA", "CoLA/test.tsv", "test", 1063),
    ("COLA", "CoLA/train_part.tsv", "train", 7250),
    ("COLA", "CoLA/val_part.tsv", "train", 1301),
    ("RTE", "RTE/dev.tsv", "dev", 277),
    ("RTE", "RTE/test.tsv", "test", 3000),
    ("RTE", "RTE/train_part.tsv", "train", 2127),
    ("RTE", "RTE/val_part.tsv", "train", 363),
    ("WNLI", "WNLI/dev.tsv", "dev", 71),
    ("WNLI", "WNLI/test.tsv", "test", 146),
]

# How google-research/bert run_classifier.py reads each file: csv with no quoting, fixed positions.
# (skip first row?, text_a, text_b, label) positions; None where absent.
REFERENCE_POSITIONS = {
    ("SST-2", "train"): (True, 0, None, 1), ("SST-2", "dev"): (True, 0, None, 1),
    ("SST-2", "test"): (True, 1, None, None),
    ("MRPC", "train"): (True, 3, 4, 0), ("MRPC", "dev"): (True, 3, 4, 0), ("MRPC", "test"): (True, 3, 4, None),
    ("COLA", "train"): (False, 3, None, 1), ("COLA", "dev"): (False, 3, None, 1),
    ("COLA", "test"): (True, 1, None, None),
    ("RTE", "train"): (True, 1, 2, 3), ("RTE", "dev"): (True, 1, 2, 3), ("RTE", "test"): (True, 1, 2, None),
    ("WNLI", "dev"): (True, 1, 2, 3), ("WNLI", "test"): (True, 1, 2, None),
}


def _reference_read(task, path, split):
    skip_first, a, b, label = REFERENCE_POSITIONS[(task, split)]
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if skip_first and not path.endswith("val_part.tsv"):  # RTE val_part has no header
        rows = rows[1:]
    labels = None if label is None else [r[label] for r in rows]
    return [r[a] for r in rows], None if b is None else [r[b] for r in rows], labels


@pytest.mark.parametrize("task,name,split,rows", REAL_FILES, ids=[f[1] for f in REAL_FILES])
def test_real_glue_files_match_reference_reader(shared_data, task, name, split, rows):
    path = str(shared_data / "glue" / name)
    examples = read_glue_tsv(task, path, split)
    assert len(examples) == rows and len(examples.ids) == rows and examples.num_skipped == 0
    ref_a, ref_b, ref_labels = _reference_read(task, path, split)
    assert examples.text_a == ref_a
    assert examples.text_b == ref_b
    if ref_labels is None:
        assert examples.labels is None
    else:
        names = GLUE_TASKS[task].label_names
        assert [names[i] for i in examples.labels] == ref_labels
        assert examples.labels.dtype == np.int64


def test_real_label_balance_and_quotes(shared_data):
    glue = shared_data / "glue"
    mrpc_train = read_glue_tsv("MRPC", str(glue / "MRPC"), "train")  # a directory: train.tsv is found
    assert int(mrpc_train.labels.sum()) == 2474  # MRPC train: 2474 paraphrases of 3668
    mrpc_dev = read_glue_tsv("mrpc", str(glue / "MRPC"), "validation")
    assert mrpc_dev.split == "dev" and int(mrpc_dev.labels.sum()) == 279
    # A leading quote stays text (no quote processing), and the BOM does not hide the Quality column.
    assert mrpc_dev.text_b[0] == '"The foodservice pie business does not fit our long-term growth strategy.'
    assert int(read_glue_tsv("sst2", str(glue / "SST-2"), "dev").labels.sum()) == 444
    cola_dev = read_glue_tsv("CoLA", str(glue / "CoLA"), "dev")
    last = (glue / "CoLA" / "dev.tsv").read_text(encoding="utf-8").split("\n")[-1]  # no trailing newline
    assert cola_dev.text_a[-1] == last.split("\t")[3] and cola_dev.labels[-1] == int(last.split("\t")[1])
    rte_dev = read_glue_tsv("RTE", str(glue / "RTE"), "dev")
    assert rte_dev.text_a[0].startswith("Dana Reeve")
    assert GLUE_TASKS["RTE"].label_names[rte_dev.labels[0]] == "not_entailment"


def test_real_ids_come_from_the_index_column(shared_data, caplog):
    glue = shared_data / "glue"
    np.testing.assert_array_equal(read_glue_tsv("RTE", str(glue / "RTE"), "test").ids, np.arange(3000))
    np.testing.assert_array_equal(read_glue_tsv("SST-2", str(glue / "SST-2"), "test").ids, np.arange(1821))
    with caplog.at_level(logging.WARNING):
        val_part = read_glue_tsv("RTE", str(glue / "RTE" / "val_part.tsv"), "train")
    assert list(val_part.ids[:3]) == [2, 7, 10]  # headerless: the index column by position
    assert "no RTE header row" in caplog.text
    np.testing.assert_array_equal(read_glue_tsv("SST-2", str(glue / "SST-2"), "dev").ids, np.arange(872))


def test_mnli_layouts_by_header_and_by_position(tmp_path):
    write_tsv(tmp_path, "train.tsv", [MNLI_TRAIN_HEADER, mnli_row(0, 'He said "hi', "B0", ["neutral", "neutral"]),
                                   mnli_row(1, "A1", "B1", ["entailment", "contradiction"])])
    write_tsv(tmp_path, "dev_mismatched.tsv", [MNLI_DEV_HEADER, mnli_row(7, "A", "B", ["neutral"] * 5 + ["entailment"])])
    write_tsv(tmp_path, "test_matched.tsv", [MNLI_TEST_HEADER, mnli_row(42, "A", "B", [])])
    mnli = GLUE_TASKS["mnli"]
    train = read_glue_tsv("MNLI", str(tmp_path), "train")
    assert train.text_a == ['He said "hi', "A1"] and train.text_b == ["B0", "B1"]
    assert [mnli.label_names[i] for i in train.labels] == ["neutral", "contradiction"]  # gold_label, not label1
    dev = read_glue_tsv("MNLI", str(tmp_path), "validation_mismatched")
    assert dev.split == "dev_mismatched" and mnli.label_names[dev.labels[0]] == "entailment" and dev.ids[0] == 7
    test = read_glue_tsv("MNLI", str(tmp_path), "test_matched")
    assert test.labels is None and list(test.ids) == [42]
    headerless = write_tsv(tmp_path, "headerless.tsv", [mnli_row(3, "A", "B", ["neutral", "contradiction"])])
    assert mnli.label_names[read_glue_tsv("MNLI", headerless, "train").labels[0]] == "contradiction"
    with pytest.raises(ValueError, match="no split 'dev'"):
        read_glue_tsv("MNLI", str(tmp_path), "dev")


def test_other_task_layouts(tmp_path):
    qqp = write_tsv(tmp_path, "qqp.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                                       "5\t1\t2\tWhy?\tHow?\t1", "9\t3\t4\tWho?\tWhom?\t0"])
    examples = read_glue_tsv("QQP", qqp, "train")
    assert examples.text_b == ["How?", "Whom?"] and list(examples.labels) == [1, 0] and list(examples.ids) == [5, 9]
    qqp_test = write_tsv(tmp_path, "qqp_test.tsv", ["id\tquestion1\tquestion2", "0\tWhy?\tHow?"])
    assert read_glue_tsv("QQP", qqp_test, "test").text_a == ["Why?"]
    stsb_header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    stsb = write_tsv(tmp_path, "stsb.tsv", [stsb_header,
                                         "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\t"
                                         "A plane.\tAn air plane.\t5.000",
                                         "1\tmain-news\tx\t2012\t0002\tnone\tnone\tA.\tB.\t0.75"])
    stsb_examples = read_glue_tsv("STSB", stsb, "dev")
    assert stsb_examples.labels.dtype == np.float32
    np.testing.assert_allclose(stsb_examples.labels, [5.0, 0.75])
    assert stsb_examples.text_b == ["An air plane.", "B."]
    qnli = write_tsv(tmp_path, "qnli.tsv", ["index\tquestion\tsentence\tlabel", "0\tQ?\tS.\tnot_entailment"])
    assert list(read_glue_tsv("QNLI", qnli, "train").labels) == [1]
    write_tsv(tmp_path, "AX.tsv", ["index\tsentence1\tsentence2", "0\tThe cat sat.\tThe cat did not sit."])
    ax = read_glue_tsv("ax", str(tmp_path), "test")
    assert ax.labels is None and ax.text_b == ["The cat did not sit."]
    with pytest.raises(ValueError, match="AX has no split 'train'"):
        read_glue_tsv("AX", str(tmp_path), "train")


def test_line_endings_blank_lines_and_unbalanced_quotes(tmp_path):
    path = write_tsv(tmp_path, "dev.tsv", ["sentence\tlabel", '"an unbalanced quote\t1', "", "plain\t0",
                                        'ends with "\t1'], ending="\r\n", final_newline=False)
    examples = read_glue_tsv("SST-2", path, "dev")
    assert examples.text_a == ['"an unbalanced quote', "plain", 'ends with "'] and list(examples.labels) == [1, 0, 1]
    assert list(examples.ids) == [0, 1, 2]


def test_malformed_rows_name_file_and_line(tmp_path, caplog):
    path = write_tsv(tmp_path, "train.tsv", ["gj04\t1\t\tGood one.", "gj04\t0\t*", "gj04\t1\t\t   ", "\t\t\t",
                                          "gj04\t0\t*\tBad one."])
    with pytest.raises(ValueError, match=r"train\.tsv:2: expected 4 tab-separated columns .* got 3"):
        read_glue_tsv("COLA", path, "train")
    with caplog.at_level(logging.WARNING):
        examples = read_glue_tsv("COLA", path, "train", skip_bad_rows=True)
    assert examples.num_skipped == 3 and examples.text_a == ["Good one.", "Bad one."]
    assert list(examples.labels) == [1, 0] and list(examples.ids) == [0, 4]
    assert "train.tsv:3: empty text in column 'sentence'" in caplog.text
    assert "skipped 3 malformed rows of 5" in caplog.text
    no_label = write_tsv(tmp_path, "sst.tsv", ["sentence\tlabel", "fine\t1", "no label here\t "])
    with pytest.raises(ValueError, match=r"sst\.tsv:3: empty label in column 'label'"):
        read_glue_tsv("SST-2", no_label, "train")
    assert read_glue_tsv("SST-2", no_label, "train", skip_bad_rows=True).text_a == ["fine"]
    header_file = write_tsv(tmp_path, "rte.tsv", ["index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\tentailment",
                                               "1\tA.\tB.\tentailment\textra"])
    with pytest.raises(ValueError, match=r"rte\.tsv:3: expected 4 .*index, sentence1, sentence2, label.* got 5"):
        read_glue_tsv("RTE", header_file, "train")
    bad_index = write_tsv(tmp_path, "test.tsv", ["index\tsentence", "x7\tHello."])
    with pytest.raises(ValueError, match=r"test\.tsv:2: the 'index' column must be an integer, got 'x7'"):
        read_glue_tsv("SST-2", bad_index, "test")
    bad_bytes = tmp_path / "bytes.tsv"
    bad_bytes.write_bytes(b"sentence\tlabel\nok\t1\n\xff\xfe\t0\n")
    with pytest.raises(ValueError, match=r"bytes\.tsv:3: not UTF-8 text \(byte 0xff at column 1\)"):
        read_glue_tsv("SST-2", str(bad_bytes), "train", skip_bad_rows=True)


@pytest.mark.parametrize("task,lines,message", [
    ("SST-2", ["sentence\tlabel", "fine\t1", "odd\t2"],
     r"dev\.tsv:3: label '2' is not a SST-2 label; allowed: '0', '1'"),
    ("RTE", ["index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\tneutral"],
     r"dev\.tsv:2: label 'neutral' is not a RTE label; allowed: 'entailment', 'not_entailment'"),
    ("MNLI", [MNLI_TRAIN_HEADER, mnli_row(0, "A", "B", ["-", "-"])], r"dev\.tsv:2: label '-' is not a MNLI label"),
    ("STS-B", ["index\tsentence1\tsentence2\tscore", "0\tA.\tB.\t5.5"],
     r"dev\.tsv:2: STS-B score '5.5' is not a number in \[0, 5\]"),
    ("STS-B", ["index\tsentence1\tsentence2\tscore", "0\tA.\tB.\tnan"], r"score 'nan' is not a number"),
    ("STS-B", ["index\tsentence1\tsentence2\tscore", "0\tA.\tB.\thigh"], r"score 'high' is not a number"),
])
def test_bad_labels_are_always_errors(tmp_path, task, lines, message):
    path = write_tsv(tmp_path, "dev.tsv", lines)
    for skip in (False, True):
        with pytest.raises(ValueError, match=message):
            read_glue_tsv(task, path, "dev_matched" if task == "MNLI" else "dev", skip_bad_rows=skip)


def test_header_without_a_needed_column(tmp_path):
    path = write_tsv(tmp_path, "dev.tsv", ["index\tsentence1\tsentence2", "0\tA.\tB."])
    with pytest.raises(ValueError, match=r"dev\.tsv:1: the header has no column 'label'"):
        read_glue_tsv("RTE", path, "dev")


def test_missing_files_and_unknown_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="dev.tsv found in"):
        read_glue_tsv("RTE", str(tmp_path), "dev")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_glue_tsv("RTE", str(tmp_path / "nope.tsv"), "dev")
    with pytest.raises(ValueError, match="unknown GLUE task 'SQUAD'; tasks: COLA, SST-2"):
        read_glue_tsv("SQUAD", str(tmp_path), "dev")
    with pytest.raises(ValueError, match="RTE has no split 'dev_matched'"):
        glue_file_path("RTE", str(tmp_path), "dev_matched")


def test_task_table():
    assert list(GLUE_TASKS) == ["COLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE", "WNLI", "AX"]
    assert GLUE_TASKS["sst2"] is GLUE_TASKS["SST-2"] is get_glue_task("Sst-2")
    assert GLUE_TASKS["stsb"].name == "STS-B" and "CoLA" in GLUE_TASKS and "SQuAD" not in GLUE_TASKS
    with pytest.raises(KeyError, match="unknown GLUE task"):
        GLUE_TASKS["squad"]
    stsb, mnli, mrpc = GLUE_TASKS["STS-B"], GLUE_TASKS["MNLI"], GLUE_TASKS["MRPC"]
    assert stsb.is_regression and stsb.num_classes == 1 and stsb.label_names == () and stsb.is_pair
    assert mnli.num_classes == 3 and mnli.eval_splits == ("dev_matched", "dev_mismatched")
    assert mnli.test_splits == ("test_matched", "test_mismatched")
    assert mnli.tfds_splits["dev_mismatched"] == "validation_mismatched"
    assert mrpc.metric_names == ("f1", "accuracy") and GLUE_TASKS["COLA"].metric_names == ("matthews_corr",)
    assert not GLUE_TASKS["COLA"].is_pair and GLUE_TASKS["AX"].splits == ("test",)
    assert {t.tfds_name for t in GLUE_TASKS.values()} == {
        "glue/cola", "glue/sst2", "glue/mrpc", "glue/stsb", "glue/qqp", "glue/mnli", "glue/qnli", "glue/rte",
        "glue/wnli", "glue/ax"}
    for task in GLUE_TASKS.values():
        assert isinstance(task, GlueTask) and sorted(task.tfds_label_order) == sorted(task.label_names)
