"""tasks.run_squad end to end through the CLI with a tiny model on a few articles of the real SQuAD dev files. Its
six command lines run as children of one process (`forked_commands`): TensorFlow is imported once."""

import json

import pytest
from tests.tasks.forked_commands import run_forked

from official_bert.metrics.squad import evaluate

pytestmark = pytest.mark.slow
MISSING_DATA = [([], "training needs --train_file or --tfds_name"),
                (["--do_train=false"], "nothing to do: give --predict_file or --tfds_name"),
                (["--train_file=train-v1.1.json"], "--train_file=train-v1.1.json: no such file (SQuAD's JSON files: "
                                                   "train-v1.1.json, dev-v1.1.json"),
                (["--do_train=false", "--predict_file=nowhere.json"], "--predict_file=nowhere.json: no such file")]


def _articles(source, target, indices, version, max_paragraphs=None):
    data = json.loads(source.read_text())["data"]
    articles = [{**data[i], "paragraphs": data[i]["paragraphs"][:max_paragraphs]} for i in indices]
    squad = {"version": version, "data": articles}
    target.write_text(json.dumps(squad))
    return squad


def _args(*args):
    return ["--max_seq_length=64", "--max_query_length=24", "--doc_stride=32", "--train_batch_size=16",
            "--eval_batch_size=128", "--num_train_steps=3", *args]


@pytest.fixture(scope="module")
def runs(shared_data, tiny_checkpoint, tmp_path_factory):
    """The six command lines: (root, {name: CompletedProcess}): "v1" (its train file with one mismatched answer),
    "v2 refused" (v2 data without --version_2_with_negative), "v2", "missing 0".."missing 3" (`MISSING_DATA`), and
    "v2 again" (the "v2" model_dir evaluated with --do_train=false and no settings flags)."""
    root = tmp_path_factory.mktemp("squad_runs")
    v1, v2 = root / "v1", root / "v2"
    v1.mkdir()
    v2.mkdir()
    train = _articles(shared_data / "squad" / "v1.1" / "dev-v1.1.json", v1 / "train.json", [29, 32], "1.1")
    _articles(shared_data / "squad" / "v1.1" / "dev-v1.1.json", v1 / "dev.json", [38], "1.1")
    train["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 1  # reported, never a crash
    (v1 / "train.json").write_text(json.dumps(train))
    source = shared_data / "squad" / "v2.0" / "cs224n-dev-half-v2.0.json"
    _articles(source, v2 / "train.json", [4], "v2.0")
    _articles(source, v2 / "dev.json", [0], "v2.0", max_paragraphs=12)
    checkpoint = f"--init_checkpoint={tiny_checkpoint}"
    v2_flags = [f"--train_file={v2 / 'train.json'}", f"--predict_file={v2 / 'dev.json'}", checkpoint]
    commands = {"v1": [f"--train_file={v1 / 'train.json'}", f"--predict_file={v1 / 'dev.json'}", checkpoint,
                       f"--model_dir={v1 / 'squad'}"],
                "v2 refused": [*v2_flags, f"--model_dir={v2 / 'v1'}"],
                "v2": [*v2_flags, f"--model_dir={v2 / 'squad2'}", "--version_2_with_negative",
                       "--null_score_diff_threshold=0.5"],
                **{f"missing {i}": [checkpoint, f"--model_dir={root / f'm{i}'}", *flags]
                   for i, (flags, _) in enumerate(MISSING_DATA)}}
    out = root / "out"
    out.mkdir()
    lines = [("tasks.run_squad", _args(*args)) for args in commands.values()]
    # The v2 model_dir evaluated again as a user would, naming none of its settings (after "v2" has trained it).
    commands["v2 again"] = None
    lines.append(("tasks.run_squad", [f"--model_dir={v2 / 'squad2'}", "--do_train=false", "--eval_batch_size=128",
                                      f"--predict_file={v2 / 'dev.json'}", f"--output_dir={v2 / 'again'}"]))
    results = run_forked(lines, out)
    return root, dict(zip(commands, results))


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


def test_v1_train_predict_evaluate(runs):
    root, processes = runs
    train, dev = (json.loads((root / "v1" / f"{name}.json").read_text()) for name in ("train", "dev"))
    bad = train["data"][0]["paragraphs"][0]["qas"][0]
    model_dir, result = root / "v1" / "squad", processes["v1"]
    assert result.returncode == 0, result.stderr[-3000:]
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


def test_v2_writes_null_odds_and_no_answer_figures(runs):
    root, processes = runs
    dev = json.loads((root / "v2" / "dev.json").read_text())
    refused = processes["v2 refused"]
    assert refused.returncode != 0 and "pass --version_2_with_negative" in refused.stderr

    model_dir = root / "v2" / "squad2"
    assert processes["v2"].returncode == 0, processes["v2"].stderr[-3000:]
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


def test_an_evaluation_without_settings_flags_uses_the_model_dirs_own(runs):
    # SQuAD 2.0, seq 64, stride 32, query 24, threshold 0.5 come from the model_dir, not the flags' defaults (v1.1,
    # 384, 128, 64, 0.0), and its task.json, which the export reads, keeps them.
    root, processes = runs
    model_dir = root / "v2" / "squad2"
    recorded = json.loads((model_dir / "task.json").read_text())
    again = processes["v2 again"]
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((model_dir / "task.json").read_text()) == recorded
    assert (recorded["max_seq_length"], recorded["doc_stride"], recorded["max_query_length"]) == (64, 32, 24)
    assert recorded["version_2_with_negative"] and recorded["null_score_diff_threshold"] == 0.5
    [predictions] = (root / "v2" / "again").rglob("predictions.json")
    assert json.loads(predictions.read_text()) == json.loads((model_dir / "predictions.json").read_text())


@pytest.mark.parametrize("index", range(len(MISSING_DATA)))
def test_missing_data_is_a_usage_error(runs, index):
    result, message = runs[1][f"missing {index}"], MISSING_DATA[index][1]
    assert result.returncode != 0 and message in result.stderr
