"""tasks.run_squad end to end through the CLI with a tiny model on a few articles of the real SQuAD dev files."""

import json
import pathlib
import subprocess
import sys

import pytest

from official_bert.metrics.squad import evaluate

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _articles(source, target, indices, version, max_paragraphs=None):
    data = json.loads(source.read_text())["data"]
    articles = [{**data[i], "paragraphs": data[i]["paragraphs"][:max_paragraphs]} for i in indices]
    squad = {"version": version, "data": articles}
    target.write_text(json.dumps(squad))
    return squad


def _run(*args, check=True):
    result = subprocess.run([sys.executable, "-m", "tasks.run_squad", "--max_seq_length=64", "--max_query_length=24",
                             "--doc_stride=32",
                             "--train_batch_size=16", "--eval_batch_size=128", "--num_train_steps=3", *args],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def _contexts(squad):
    return {qa["id"]: paragraph["context"] for article in squad["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]}


def _check_predictions(model_dir, squad):
    contexts = _contexts(squad)
    predictions = json.loads((model_dir / "predictions.json").read_text())
    nbest = json.loads((model_dir / "nbest_predictions.json").read_text())
    assert sorted(predictions) == sorted(nbest) == sorted(contexts)  # every question answered
    for qid, entries in nbest.items():
        assert 1 <= len(entries) <= 21
        for entry in entries:  # answers are character spans of the original context
            if entry["start"] >= 0:
                assert contexts[qid][entry["start"]:entry["end"]] == entry["text"] != ""
    return predictions


def test_v1_train_predict_evaluate(shared_data, tiny_checkpoint, tmp_path):
    train = _articles(shared_data / "squad" / "v1.1" / "dev-v1.1.json", tmp_path / "train.json", [29, 32], "1.1")
    dev = _articles(shared_data / "squad" / "v1.1" / "dev-v1.1.json", tmp_path / "dev.json", [38], "1.1")
    bad = train["data"][0]["paragraphs"][0]["qas"][0]
    bad["answers"][0]["answer_start"] += 1  # a mismatched answer is reported, never a crash
    (tmp_path / "train.json").write_text(json.dumps(train))
    model_dir = tmp_path / "squad"
    result = _run(f"--train_file={tmp_path / 'train.json'}", f"--predict_file={tmp_path / 'dev.json'}",
                  f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}")
    assert f"qas_id {bad['id']}: answer" in result.stderr and "mismatched_answers=1" in result.stderr
    assert "eval results" in result.stdout
    for name in ("task.json", "model.weights.h5", "encoder/model.safetensors", "train_results.json",
                 "predictions.json", "nbest_predictions.json", "eval_results.json"):
        assert (model_dir / name).is_file(), name
    assert not (model_dir / "null_odds.json").exists()
    assert json.loads((model_dir / "task.json").read_text())["task"] == "squad"
    assert json.loads((model_dir / "train_results.json").read_text())["steps"] == 3

    predictions = _check_predictions(model_dir, dev)
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["num_examples"] == len(predictions) == 104 and results["num_windows"] >= 104
    # the figures are the official ones of the written predictions on the file
    official = evaluate(dev["data"], predictions)
    assert {k: results[k] for k in official} == official
    assert 0 <= results["exact_match"] <= results["f1"] <= 100


def test_v2_writes_null_odds_and_no_answer_figures(shared_data, tiny_checkpoint, tmp_path):
    source = shared_data / "squad" / "v2.0" / "cs224n-dev-half-v2.0.json"
    _articles(source, tmp_path / "train.json", [4], "v2.0")
    dev = _articles(source, tmp_path / "dev.json", [0], "v2.0", max_paragraphs=12)
    flags = [f"--train_file={tmp_path / 'train.json'}", f"--predict_file={tmp_path / 'dev.json'}",
             f"--init_checkpoint={tiny_checkpoint}"]
    refused = _run(*flags, f"--model_dir={tmp_path / 'v1'}", check=False)
    assert refused.returncode != 0 and "pass --version_2_with_negative" in refused.stderr

    model_dir = tmp_path / "squad2"
    _run(*flags, f"--model_dir={model_dir}", "--version_2_with_negative", "--null_score_diff_threshold=0.5")
    predictions = _check_predictions(model_dir, dev)
    null_odds = json.loads((model_dir / "null_odds.json").read_text())
    assert sorted(null_odds) == sorted(predictions)
    assert all((predictions[q] == "") == (null_odds[q] > 0.5) for q in predictions)
    results = json.loads((model_dir / "eval_results.json").read_text())
    official = evaluate(dev["data"], predictions, na_probs=null_odds)
    assert {k: results[k] for k in official} == official
    assert results["HasAns_total"] + results["NoAns_total"] == results["total"] == 70
    for key in ("exact", "f1", "HasAns_f1", "NoAns_exact", "best_f1", "best_f1_thresh"):
        assert key in results


@pytest.mark.parametrize("flags, message", [
    ([], "training needs --train_file or --tfds_name"),
    (["--do_train=false"], "nothing to do: give --predict_file or --tfds_name"),
])
def test_missing_data_is_a_usage_error(tiny_checkpoint, tmp_path, flags, message):
    result = _run(f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={tmp_path / 'm'}", *flags, check=False)
    assert result.returncode != 0 and message in result.stderr
