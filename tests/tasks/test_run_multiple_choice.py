"""tasks.run_multiple_choice end to end through the CLI, with a tiny model: train, evaluate and predict on the real
SWAG sample, predict a SWAG test.csv (no labels), questions with different numbers of choices, questions without a
context (CommonsenseQA's shape) through to the export, an empty train file, a train file that is not UTF-8. The
command lines run in order as children of one process (`forked_commands`): TensorFlow is imported once."""

import csv
import json

import pytest
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow
MODULE = "tasks.run_multiple_choice"
GENERIC = [{"context": f"Story {i}: the {w} went to the market.", "question": "What happened next?",
            "choices": ["It bought bread.", "It flew to the moon.", "Nothing.", "It sang."][:2 + i % 3],
            "label": i % 2} for i, w in enumerate(["farmer", "cat", "child", "baker", "dog", "queen"])]
QUESTIONS = [("Where would you put a plate after washing it?", ["cupboard", "ocean", "roof", "shoe", "forest"]),
             ("What do people use to cut paper?", ["scissors", "spoon", "pillow", "cloud", "river"]),
             ("Where do fish live?", ["desert", "water", "attic", "oven", "tree"]),
             ("What is cold and frozen?", ["fire", "sun", "ice", "soup", "sand"]),
             ("What do you read?", ["book", "chair", "lamp", "grass", "door"]),
             ("Where do you sleep?", ["kitchen", "garage", "road", "bed", "roof"])]


def _args(checkpoint, model_dir, *extra):
    return [f"--init_checkpoint={checkpoint}", f"--model_dir={model_dir}", "--max_seq_length=32",
            "--train_batch_size=4", "--eval_batch_size=16", *extra]


def _ok(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _write_test_csv(sample, test_csv):
    """SWAG's test.csv layout (no label column) of the sample's first three questions."""
    rows = [json.loads(line) for line in sample.read_text().splitlines()][:3]
    with open(test_csv, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0",
                         "ending1", "ending2", "ending3"])
        for i, row in enumerate(rows):
            writer.writerow([i, f"v{i}", i, row["sent1"], row["sent1"], row["sent2"], "gold",
                             *[row[f"ending{k}"] for k in range(4)]])


@pytest.fixture(scope="module")
def runs(shared_data, tiny_checkpoint, tmp_path_factory):
    """(name -> CompletedProcess, the directory) of every command line here, run in order."""
    root = tmp_path_factory.mktemp("runs")
    sample = shared_data / "swag" / "sample.jsonl"
    _write_test_csv(sample, root / "test.csv")
    (root / "generic.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GENERIC), encoding="utf-8")
    (root / "train.jsonl").write_text("\n", encoding="utf-8")
    rows = [{"id": f"q{i}", "question": q, "choices": c, "label": i % 5, **({"context": ""} if i == 2 else {})}
            for i, (q, c) in enumerate(QUESTIONS)]
    (root / "commonsense_qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "latin1.jsonl").write_bytes(b'{"question": "Why?", "choices": ["a", "b"], "label": 0}\n'
                                        b'{"question": "caf\xe9?", "choices": ["a", "b"], "label": 1}\n')
    commands = {
        "swag": _args(tiny_checkpoint, root / "swag", f"--train_file={sample}", f"--eval_file={sample}",
                      "--num_train_steps=3", "--do_predict"),
        # Predicted with the trained model_dir, into another directory.
        "test_csv": [f"--model_dir={root / 'swag'}", "--max_seq_length=32", "--do_train=false", "--do_eval=false",
                     "--do_predict", f"--predict_file={root / 'test.csv'}",
                     f"--output_dir={root / 'test_predictions'}"],
        "generic": _args(tiny_checkpoint, root / "generic", f"--train_file={root / 'generic.jsonl'}",
                         f"--eval_file={root / 'generic.jsonl'}", "--num_train_steps=2", "--do_predict"),
        "empty": _args(tiny_checkpoint, root / "never_empty", f"--train_file={root / 'train.jsonl'}",
                       "--do_eval=false"),
        "csqa": _args(tiny_checkpoint, root / "csqa", f"--train_file={root / 'commonsense_qa.jsonl'}",
                      f"--eval_file={root / 'commonsense_qa.jsonl'}", "--num_train_steps=2", "--do_predict"),
        "latin1": _args(tiny_checkpoint, root / "never_latin1", f"--train_file={root / 'latin1.jsonl'}",
                        "--do_eval=false"),
    }
    results = run_forked([(MODULE, args) for args in commands.values()], root)
    return dict(zip(commands, results)), root


def test_train_evaluate_predict_on_the_swag_sample_then_predict_a_test_csv(runs):
    results_of, root = runs
    model_dir = root / "swag"
    result = _ok(results_of["swag"])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["num_examples"] == 10 and results["chance_accuracy"] == 0.25
    assert 0.0 <= results["accuracy"] <= 1.0
    assert "eval results" in result.stdout and "accuracy=" in result.stdout
    task = json.loads((model_dir / "task.json").read_text())
    assert task["kind"] == "multiple_choice" and task["max_seq_length"] == 32
    predictions = (model_dir / "predictions" / "predictions.txt").read_text().splitlines()
    assert len(predictions) == 10 and set(predictions) <= {"0", "1", "2", "3"}

    from official_bert.model_dir import load_model_dir
    from official_bert.models import BertMultipleChoice

    assert isinstance(load_model_dir(str(model_dir)).model, BertMultipleChoice)

    # SWAG's test.csv layout: no label column. Predicted with the trained model_dir, into another directory.
    _ok(results_of["test_csv"])
    output_dir = root / "test_predictions"
    # The same three questions get the same choices as in the first run's predictions of the sample.
    assert (output_dir / "predictions" / "predictions.txt").read_text().splitlines() == predictions[:3]


def test_pairs_that_do_not_fit_are_counted_as_the_tokenizers_library_counts_them(runs, shared_data,
                                                                                 tiny_checkpoint):
    """At --max_seq_length=32 some (context, choice) pairs of the SWAG sample are cut: the training, eval and
    predict counts are logged, equal to the pairs whose pieces (the `tokenizers` library's WordPiece) exceed
    32 - 3."""
    tokenizers = pytest.importorskip("tokenizers")
    from official_bert.data.multiple_choice import read_multiple_choice

    sample = shared_data / "swag" / "sample.jsonl"
    examples = read_multiple_choice(str(sample))
    tokenizer = tokenizers.BertWordPieceTokenizer(str(tiny_checkpoint / "vocab.txt"), lowercase=True)
    pieces = [len(tokenizer.encode(context, choice, add_special_tokens=False).ids)
              for context, choices in zip(examples.contexts, examples.choices) for choice in choices]
    cut, total = sum(n > 32 - 3 for n in pieces), len(pieces)
    assert 0 < cut < total
    stderr = runs[0]["swag"].stderr
    for what in ("training context-choice pairs", "context-choice pairs"):
        line = (f"{cut:,} of {total:,} {what} of {sample} ({100 * cut / total:.1f}%) do not fit "
                "--max_seq_length=32 and are cut, the longest text first")
        assert stderr.count(line) == (1 if what.startswith("training") else 2), (line, stderr[-3000:])


def test_questions_with_different_numbers_of_choices_train_and_evaluate(runs):
    _ok(runs[0]["generic"])
    model_dir = runs[1] / "generic"
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["num_examples"] == 6
    assert results["chance_accuracy"] == sum(1 / (2 + i % 3) for i in range(6)) / 6
    predictions = [int(p) for p in (model_dir / "predictions" / "predictions.txt").read_text().split()]
    assert all(0 <= p < 2 + i % 3 for i, p in enumerate(predictions))  # never a missing choice


def test_an_empty_training_file_is_refused_naming_it_before_anything_is_written(runs):
    result, empty, model_dir = runs[0]["empty"], runs[1] / "train.jsonl", runs[1] / "never_empty"
    assert result.returncode != 0
    assert f"{empty}: no questions to train on" in result.stderr
    assert not model_dir.exists()


def test_questions_without_a_context_train_evaluate_predict_and_export(runs, tmp_path, monkeypatch):
    """CommonsenseQA's shape: a question and its choices, no context (or an empty one); the question is the first
    segment, and the export answers it sent as `context` as the task's predictions did."""
    questions = QUESTIONS
    _ok(runs[0]["csqa"])
    model_dir = runs[1] / "csqa"
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["num_examples"] == 6 and results["chance_accuracy"] == pytest.approx(0.2)
    predictions = [int(p) for p in (model_dir / "predictions" / "predictions.txt").read_text().split()]
    assert len(predictions) == 6 and all(0 <= p < 5 for p in predictions)

    import functools

    from export import predict as predict_module
    from export.predict import predict
    from export.saved_model import export

    version_dir = export(str(model_dir), str(tmp_path / "export"))
    monkeypatch.setattr(predict_module, "load", functools.cache(predict_module.load))  # one load for the 6 calls
    assert [predict(version_dir, [q, *c])["label_id"] for q, c in questions] == predictions


def test_a_training_file_that_is_not_utf8_is_one_line_naming_its_line(runs):
    result, data, model_dir = runs[0]["latin1"], runs[1] / "latin1.jsonl", runs[1] / "never_latin1"  # Latin-1
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (f"error: {data}:2: not UTF-8 text (byte 0xe9 at column 18); "
                                                      f"save the file as UTF-8")
    assert not model_dir.exists()
