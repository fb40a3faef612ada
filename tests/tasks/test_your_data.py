"""docs/your-data.md's commands on its own files, with a tiny model: a CSV with custom column names and three string
labels, and a multi-label JSON-lines file, each trained, evaluated, predicted, exported and served (TF Serving's
session loader included); a regression killed and resumed; refused files. Every command line runs as a child of one
TensorFlow import (`forked_commands`)."""

import json
import re
import shlex

import numpy as np
import pytest

from tests.export.session_loader import tool_checks
from tests.tasks.forked_commands import REPO_ROOT, run_forked

pytestmark = pytest.mark.slow

PAGE = (REPO_ROOT / "docs" / "your-data.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", PAGE, re.M | re.S)
REVIEWS = ["bad", "good", "meh"]
TICKETS = ["battery", "delivery", "screen", "support"]
REGRESSION = "".join(json.dumps({"sentence1": a, "sentence2": b, "label": score}) + "\n" for a, b, score in [
    ("a man plays a guitar", "a man is playing the guitar", 4.8), ("a dog runs", "the market fell", 0.2),
    ("she slices onions", "a woman cuts an onion", 4.1), ("kids play football", "a cat sleeps", 0.5)])


def _documented_commands():
    """The page's `python -m` commands: list of (module, args)."""
    bash = next(body for language, body in BLOCKS if language == "bash").replace("\\\n", " ")
    return [(words[2], words[3:]) for words in map(shlex.split, bash.splitlines())]


def _tiny(args, checkpoint):
    return [*args, f"--init_checkpoint={checkpoint}", "--num_train_steps=3", "--max_seq_length=16",
            "--train_batch_size=4", "--eval_batch_size=8"]


@pytest.fixture(scope="module")
def runs(tiny_checkpoint, tmp_path_factory):
    """Every command, run in a work directory holding the page's files: (work directory, CompletedProcesses by
    name)."""
    work = tmp_path_factory.mktemp("your_data")
    examples = {"csv": next(body for language, body in BLOCKS if language == "csv"),
                "jsonl": next(body for language, body in BLOCKS if language == "json")}
    for name in ("reviews", "tickets"):
        for split in ("train", "dev", "test"):
            ext = "csv" if name == "reviews" else "jsonl"
            (work / f"{name}_{split}.{ext}").write_text(examples[ext], encoding="utf-8")
    (work / "scores.jsonl").write_text(REGRESSION, encoding="utf-8")
    (work / "new_label.csv").write_text(examples["csv"] + "Superb.,great\n", encoding="utf-8")
    (work / "no_text.csv").write_text("review,verdict\nfine,meh\n", encoding="utf-8")
    (work / "bad.jsonl").write_text('{"text": "fine", "label": "a"}\n{"text": "x" "label": "b"}\n', encoding="utf-8")

    train_reviews, export_reviews, train_tickets, export_tickets = _documented_commands()
    classifier = "tasks.run_classifier"
    regression = _tiny(["--train_file=scores.jsonl", "--eval_file=scores.jsonl", "--model_dir=out/scores",
                        "--checkpoint_steps=1"], tiny_checkpoint)
    regression[regression.index("--num_train_steps=3")] = "--num_train_steps=6"
    commands = {
        "reviews": (train_reviews[0], _tiny(train_reviews[1], tiny_checkpoint)),
        "export_reviews": export_reviews,
        "tickets": (train_tickets[0], _tiny(train_tickets[1], tiny_checkpoint)),
        "export_tickets": export_tickets,
        "evaluate_reviews": (classifier, ["--do_train=false", "--model_dir=out/reviews", "--eval_file=reviews_dev.csv",
                                          "--text_column=review", "--label_column=verdict",
                                          "--output_dir=out/reviews_again", "--max_seq_length=16"]),
        "evaluate_reviews_without_columns": (classifier, ["--do_train=false", "--model_dir=out/reviews",
                                                          "--eval_file=reviews_dev.csv",
                                                          "--output_dir=out/reviews_remembered",
                                                          "--max_seq_length=16"]),
        "killed": (classifier, regression, (str(work / "out" / "scores"), 2)),
        "resumed": (classifier, regression),
        "new_label": (classifier, ["--do_train=false", "--model_dir=out/reviews", "--eval_file=new_label.csv",
                                   "--text_column=review", "--label_column=verdict", "--max_seq_length=16"]),
        "no_text": (classifier, _tiny(["--train_file=no_text.csv", "--label_column=verdict", "--model_dir=out/x"],
                                      tiny_checkpoint)),
        "bad_json": (classifier, _tiny(["--train_file=bad.jsonl", "--model_dir=out/y"], tiny_checkpoint)),
        "with_task": (classifier, ["--task=MRPC", "--train_file=reviews_train.csv"]),
        "tune_single_label": (classifier, ["--train_file=reviews_train.csv", "--tune_threshold", "--model_dir=out/z"]),
        "predict_nothing": (classifier, _tiny(["--train_file=reviews_train.csv", "--text_column=review",
                                               "--label_column=verdict", "--do_predict", "--model_dir=out/z"],
                                              tiny_checkpoint)),
    }
    results = run_forked([list(command) for command in commands.values()], work, cwd=work, timeout=900)
    return work, dict(zip(commands, results))


def _ok(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _error(result):
    """The one-line error of a refused command."""
    assert result.returncode == 2, result.stderr[-3000:]
    return result.stderr.strip().splitlines()[-1]


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_csv_with_its_own_columns_and_string_labels(runs):
    work, results = runs
    _ok(results["reviews"])
    model_dir = work / "out" / "reviews"
    info = json.loads((model_dir / "task.json").read_text(encoding="utf-8"))
    assert info["label_names"] == REVIEWS and info["num_classes"] == 3 and "multi_label" not in info
    assert info["text_features"] == ["text"] and info["task"] == "reviews_train"
    # run.json fingerprints the training file: a run on other data does not resume this one
    data = json.loads((model_dir / "run.json").read_text(encoding="utf-8"))["data"]
    assert [source["file"] for source in data] == [str(work / "reviews_train.csv")] and data[0]["sha256"]
    evaluation = json.loads((model_dir / "eval_results.json").read_text(encoding="utf-8"))
    assert set(evaluation) == {"accuracy", "macro_f1", "weighted_f1", "num_examples"}
    assert evaluation["num_examples"] == 3
    rows = (model_dir / "predictions" / "reviews_test.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "review,verdict,predicted_label,probability" and len(rows) == 4
    assert rows[1].startswith('"A lovely, moving film.",good,')  # written back as read, quotes included
    for row in rows[1:]:
        *_, label, probability = row.split(",")
        assert label in REVIEWS and 0.333 <= float(probability) <= 1.0  # the most probable of 3

    again = json.loads((work / "out" / "reviews_again" / "eval_results.json").read_text(encoding="utf-8"))
    assert again == evaluation  # --do_train=false: the same model on the same file, the labels from task.json
    # task.json keeps the training run's column flags: without them, evaluation reads the file the same way
    assert info["columns"] == ["review", None, "verdict"]
    result = _ok(results["evaluate_reviews_without_columns"])
    assert "training run's columns" in result.stderr and "--text_column=review --label_column=verdict" in result.stderr
    remembered = work / "out" / "reviews_remembered" / "eval_results.json"
    assert json.loads(remembered.read_text(encoding="utf-8")) == evaluation


def test_a_multi_label_jsonl_file(runs):
    work, results = runs
    _ok(results["tickets"])
    model_dir = work / "out" / "tickets"
    info = json.loads((model_dir / "task.json").read_text(encoding="utf-8"))
    assert info["label_names"] == TICKETS and info["multi_label"] and info["num_classes"] == 4
    evaluation = json.loads((model_dir / "eval_results.json").read_text(encoding="utf-8"))
    assert set(evaluation) == {"micro_f1", "macro_f1", "threshold", "num_examples"}
    assert evaluation["threshold"] == info["threshold"]  # the tuned threshold is the one saved
    assert 0.05 <= info["threshold"] <= 0.95
    predictions = _read_jsonl(model_dir / "predictions" / "tickets_test.jsonl")
    assert [row["text"] for row in predictions] == [row["text"] for row in _read_jsonl(work / "tickets_test.jsonl")]
    for row in predictions:
        probabilities = [row[f"probability_{name}"] for name in TICKETS]
        assert row["predicted_labels"] == [n for n, p in zip(TICKETS, probabilities) if p > info["threshold"]]


def test_the_exports_serve_the_users_labels(runs, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the graphs' tokenizer kernels)

    work, results = runs
    _ok(results["export_reviews"])
    _ok(results["export_tickets"])
    texts = tf.constant(["A lovely film.", "The battery died.", ""])
    reviews = tf.saved_model.load(str(work / "out" / "export" / "reviews" / "1")).signatures["serving_default"]
    answer = reviews(text=texts)
    assert set(answer["label"].numpy().astype(str)) <= set(REVIEWS)
    np.testing.assert_allclose(answer["probabilities"].numpy().sum(axis=-1), 1.0, rtol=1e-5)

    tickets = tf.saved_model.load(str(work / "out" / "export" / "tickets" / "1")).signatures["serving_default"]
    answer = tickets(text=texts)
    threshold = json.loads((work / "out" / "tickets" / "task.json").read_text(encoding="utf-8"))["threshold"]
    probabilities = answer["probabilities"].numpy()  # (3, 4): independent sigmoids
    np.testing.assert_array_equal(answer["predicted"].numpy(), probabilities > threshold)
    expected = np.where(probabilities > threshold, np.array(TICKETS, dtype=object), "")
    np.testing.assert_array_equal(answer["labels"].numpy().astype(str), expected.astype(str))

    # the multi-label answer converts to TFLite (no string op TFLite lacks) and answers alike there
    from export.tflite import convert, interpreter

    lite = interpreter(model_content=convert(str(work / "out" / "export" / "tickets" / "1")))
    lite_answer = lite.get_signature_runner("serving_default")(text=texts.numpy())
    np.testing.assert_allclose(lite_answer["probabilities"], probabilities, atol=1e-5)
    np.testing.assert_array_equal(lite_answer["labels"].astype(str), expected.astype(str))

    version_dirs = [work / "out" / "export" / name / "1" for name in ("reviews", "tickets")]
    checks, _ = tool_checks(version_dirs)
    for path, (code, printed) in checks.items():
        assert code == 0 and "FAILED" not in printed, printed[-2000:]


def test_float_labels_train_a_regression_that_resumes(runs):
    work, results = runs
    killed, resumed = results["killed"], _ok(results["resumed"])
    assert killed.returncode == -9 and killed.latest_checkpoint == 2
    assert not (killed.model_dir / "model.weights.h5").exists()
    assert "Resumed from" in resumed.stderr
    model_dir = work / "out" / "scores"
    info = json.loads((model_dir / "task.json").read_text(encoding="utf-8"))
    assert info["is_regression"] and info["num_classes"] == 1 and info["text_features"] == ["text", "text_b"]
    evaluation = json.loads((model_dir / "eval_results.json").read_text(encoding="utf-8"))
    assert set(evaluation) == {"pearson", "spearman", "num_examples"}


def test_bad_files_and_flags_are_one_line_errors(runs):
    work, results = runs
    assert _error(results["new_label"]) == ("error: new_label.csv:5: label 'great' is not one of the training file's "
                                            "labels (bad, good, meh)")
    assert _error(results["no_text"]) == ("error: no_text.csv:1: no column 'text' or 'sentence' or 'sentence1' "
                                          "(columns: review, verdict); name the text column with --text_column")
    assert _error(results["bad_json"]) == ("error: bad.jsonl:2: not valid JSON (Expecting ',' delimiter at column 14); "
                                           "expected one JSON object a line")
    assert _error(results["with_task"]) == ("error: --task is for a GLUE task; your own files are read with "
                                            "--train_file, --eval_file and --test_file")
    assert _error(results["tune_single_label"]) == ("error: --tune_threshold tunes a multi-label classifier's "
                                                    "decision threshold; it needs --multi_label")
    assert _error(results["predict_nothing"]) == ("error: --do_predict writes predictions for --test_file: pass "
                                                  "both, or neither")
    for name in ("x", "y", "z"):
        assert not (work / "out" / name).exists()  # refused before anything was written
