"""tasks.run_time_series_classifier end to end through the CLI with a tiny model on synthetic sequences: train,
evaluate (checked against scikit-learn), predict, evaluate and predict a finished run elsewhere, refused inputs
and settings; then `export.saved_model` (TF Serving's session loader answers its warm-up requests as the Keras
model does) and `export.tflite` (LiteRT gives the same answers). The command lines run in order as children of one
process (`forked_commands`)."""

import functools
import json
import re

import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow
MODULE = "tasks.run_time_series_classifier"
NAMES = np.array(["walk", "run", "sit"])


def _sequences(path, count, seed, labels=True, label=None):
    """`count` sequences of 3 channels and 5-12 steps (zero-padded to 12) whose first channel's frequency is the
    class."""
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, 3, count)
    lengths = rng.integers(5, 13, count)
    steps = np.arange(12)
    features = rng.normal(scale=0.3, size=(count, 12, 3))
    features[:, :, 0] += np.sin(steps[None] * (classes[:, None] + 1) * 0.5) * 2.0
    features *= (steps[None] < lengths[:, None])[..., None]
    fields = {"features": features.astype(np.float32), "lengths": lengths}
    if labels:
        fields["labels"] = NAMES[classes] if label is None else np.where(np.arange(count) == 1, label, NAMES[classes])
    np.savez(path, **fields)
    return path


def _args(model_dir, *extra):
    return [f"--model_dir={model_dir}", "--hidden_size=16", "--num_heads=2", "--train_batch_size=8",
            "--eval_batch_size=16", "--num_train_steps=6", "--checkpoint_steps=3", *extra]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(name -> CompletedProcess, the directory) of every command line here, run in order."""
    root = tmp_path_factory.mktemp("runs")
    train, dev = _sequences(root / "train.npz", 48, 0), _sequences(root / "dev.npz", 20, 1)
    unlabeled = _sequences(root / "unlabeled.npz", 5, 2, labels=False)
    unknown = _sequences(root / "unknown.npz", 6, 3, label="jump")
    model_dir = root / "motions"
    commands = {
        "train": _args(model_dir, f"--train_file={train}", f"--eval_file={dev}", "--do_predict"),
        "evaluate": [f"--model_dir={model_dir}", "--do_train=false", f"--eval_file={dev}",
                     f"--output_dir={root / 'evaluated'}"],
        "predict": [f"--model_dir={model_dir}", "--do_train=false", "--do_eval=false", "--do_predict",
                    f"--test_file={unlabeled}", f"--output_dir={root / 'predicted'}"],
        "other_shape": _args(model_dir, f"--train_file={train}", f"--eval_file={dev}", "--num_layers=2"),
        "unknown_label": _args(root / "never_unknown", f"--train_file={train}", f"--eval_file={unknown}"),
        "no_train_file": _args(root / "never_no_file", f"--eval_file={dev}"),
        "export": ["--model_dir=" + str(model_dir), f"--export_dir={root / 'export'}"],
        "tflite": [f"--saved_model_dir={root / 'export' / '1'}", f"--output={root / 'motions.tflite'}"],
        "tflite_int8": [f"--saved_model_dir={root / 'export' / '1'}", f"--output={root / 'motions_int8.tflite'}",
                        "--quantize=dynamic_int8"],
        "export_int8": ["--model_dir=" + str(model_dir), f"--export_dir={root / 'export_int8'}", "--precision=int8"],
        "query": [f"--export_dir={root / 'export'}", f"--features_file={unlabeled}"],
        "query_text": [f"--export_dir={root / 'export'}", "a text"],
        "query_other_channels": [f"--export_dir={root / 'export'}", f"--features_file={root / 'other.npz'}"],
        "query_too_long": [f"--export_dir={root / 'export'}", f"--features_file={root / 'long.npz'}"],
    }
    np.savez(root / "other.npz", features=np.zeros((2, 12, 4), np.float32))
    np.savez(root / "long.npz", features=np.ones((1, 20, 3), np.float32))
    # A --deterministic run, unbroken (8 steps in one call of the default 10); the same run at 3 steps a call
    # (checkpoints after steps 3, 6 and 8) SIGKILLed once ckpt-3 is its latest checkpoint, then resumed.
    for name in ("unbroken", "killed", "resumed"):
        run_dir = root / ("unbroken" if name == "unbroken" else "resumed")
        commands[name] = [f"--model_dir={run_dir}", f"--train_file={train}", "--do_eval=false", "--hidden_size=16",
                          "--num_heads=2", "--train_batch_size=8", "--num_train_steps=8", "--checkpoint_steps=1",
                          "--deterministic", *([] if name == "unbroken" else ["--steps_per_loop=3"])]
    modules = {"export": "export.saved_model", "tflite": "export.tflite", "tflite_int8": "export.tflite",
               "export_int8": "export.saved_model", "query": "export.predict", "query_text": "export.predict",
               "query_other_channels": "export.predict", "query_too_long": "export.predict"}
    kills = {"killed": (root / "resumed", 3)}
    results = run_forked([(modules.get(name, MODULE), args, *([kills[name]] if name in kills else []))
                          for name, args in commands.items()], root)
    return dict(zip(commands, results)), root


def _ok(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _predictions(path):
    """(labels, probabilities) of a predictions.tsv."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows[0] == ["index", "label", "probability_run", "probability_sit", "probability_walk"]
    return [row[1] for row in rows[1:]], np.array([[float(p) for p in row[2:]] for row in rows[1:]])


def test_train_evaluate_and_predict_agree_with_scikit_learn(runs):
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

    (results, root), model_dir = runs, runs[1] / "motions"
    _ok(results["train"])
    for name in ("task.json", "bert_config.json", "run.json", "model.weights.h5", "train_results.json"):
        assert (model_dir / name).is_file(), name
    info = json.loads((model_dir / "task.json").read_text())
    assert (info["kind"], info["label_names"], info["input_channels"], info["max_seq_length"]) == (
        "time_series", ["run", "sit", "walk"], 3, 13)
    assert len(info["feature_mean"]) == 3 and info["norm_first"] and info["key_keep_prob"] == 0.8
    assert info["init_scheme"] == "fan_in"
    results_file = json.loads((model_dir / "eval_results.json").read_text())
    gold = [str(label) for label in np.load(root / "dev.npz")["labels"]]
    predicted, probabilities = _predictions(model_dir / "predictions" / "predictions.tsv")  # (the dev file)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    names = ["run", "sit", "walk"]
    assert results_file["accuracy"] == pytest.approx(accuracy_score(gold, predicted))
    assert results_file["macro_f1"] == pytest.approx(f1_score(gold, predicted, average="macro"))
    assert results_file["confusion_matrix"] == confusion_matrix(gold, predicted, labels=names).tolist()
    assert results_file["label_names"] == names and results_file["num_examples"] == 20


def test_a_finished_run_evaluates_and_predicts_elsewhere(runs):
    results, root = runs
    _ok(results["evaluate"])
    evaluated = json.loads((root / "evaluated" / "eval_results.json").read_text())
    assert evaluated == json.loads((root / "motions" / "eval_results.json").read_text())
    _ok(results["predict"])
    labels, probabilities = _predictions(root / "predicted" / "predictions" / "predictions.tsv")
    assert len(labels) == 5 and set(labels) <= {"run", "sit", "walk"}


@pytest.mark.parametrize("name,message", [
    ("other_shape", "num_layers"),
    ("unknown_label", r"unknown.npz: field 'labels' has 'jump' at example 1, not a class of the training split"),
    ("no_train_file", "--do_train needs --train_file"),
])
def test_refused_runs_are_one_line(runs, name, message):
    result = runs[0][name]
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert re.search(message, result.stderr.strip().splitlines()[-1]), result.stderr[-1000:]
    assert not (runs[1] / f"never_{name}").exists()


def test_a_killed_run_resumes_to_the_unbroken_runs_weights(runs):
    import h5py

    results, root = runs
    assert results["killed"].returncode != 0  # SIGKILLed
    _ok(results["unbroken"]), _ok(results["resumed"])
    assert re.search(r"Resumed from \S+ \(step [3-7]\)", results["resumed"].stderr)  # (ckpt-3, or one after)

    def weights(path):
        with h5py.File(path) as f:
            values = {}
            f.visititems(lambda name, item: values.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset)
                         else None)
            return values

    unbroken, resumed = weights(root / "unbroken" / "model.weights.h5"), weights(root / "resumed" / "model.weights.h5")
    assert unbroken.keys() == resumed.keys() and len(unbroken) > 10
    for name in unbroken:
        np.testing.assert_array_equal(unbroken[name], resumed[name], err_msg=name)


@pytest.fixture(scope="module")
def saved_export(runs):
    """`tf.saved_model.load` of export/1, once a module on first use (the tests only call its signatures)."""
    import tensorflow as tf

    return functools.cache(lambda: tf.saved_model.load(str(runs[1] / "export" / "1")))


def _model_answers(model, features, lengths):
    mask = (np.arange(features.shape[1])[None] < lengths[:, None]).astype(np.int32)
    logits = np.asarray(model({"input_features": features, "input_mask": mask}, training=False))
    return logits, np.argmax(logits, axis=-1)


def test_the_export_answers_in_tf_servings_session_loader_as_the_model_does(runs, saved_export):
    import tensorflow as tf

    from export.warmup import read_warmup_file
    from official_bert.model_dir import load_model_dir
    from tests.export.session_loader import tool_checks

    results, root = runs
    _ok(results["export"])
    version_dir = root / "export" / "1"
    assert (version_dir / "assets" / "labels.txt").read_text().split() == ["run", "sit", "walk"]
    # `session_loader_check.py` replays the warm-up requests in TF Serving's session-based loader, then sends raw
    # texts to serving_default, which a model of numbers refuses: that request is the only one that fails.
    (code, printed), = tool_checks([version_dir])[0].values()
    assert "warm-up requests answered: 2" in printed, printed
    failed = [line for line in printed.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].startswith("FAILED raw text: ValueError: could not convert string to float"), printed
    requests = read_warmup_file(version_dir / "assets.extra" / "tf_serving_warmup_requests")
    assert [len(inputs["lengths"]) for _, inputs in requests] == [2, 1]
    served = saved_export().signatures["serving_default"]
    model = load_model_dir(str(root / "motions")).model
    for _, inputs in requests:
        logits, label_id = _model_answers(model, inputs["features"], inputs["lengths"])
        answer = served(**{name: tf.constant(value) for name, value in inputs.items()})
        np.testing.assert_allclose(answer["logits"].numpy(), logits, atol=1e-5)
        np.testing.assert_array_equal(answer["label_id"].numpy(), label_id)
        assert [label.decode() for label in answer["label"].numpy()] == [["run", "sit", "walk"][k] for k in label_id]


def test_export_predict_answers_each_sequence_of_a_features_file_as_the_run_predicts(runs):
    results, root = runs
    answers = [json.loads(line) for line in _ok(results["query"]).stdout.splitlines()]
    labels, probabilities = _predictions(root / "predicted" / "predictions" / "predictions.tsv")  # (unlabeled.npz)
    assert [answer["label"] for answer in answers] == labels
    assert [answer["label_id"] for answer in answers] == [["run", "sit", "walk"].index(label) for label in labels]
    np.testing.assert_allclose([answer["probabilities"] for answer in answers], probabilities, atol=1e-5)


@pytest.mark.parametrize("name,message", [
    ("query_text", "serving_default takes feature sequences, not texts; pass --features_file"),
    ("query_other_channels", r"other.npz: field 'features' has 4 channels; the model takes 3"),
    ("query_too_long", r"long.npz: field 'lengths' reaches 20 steps; the model takes up to 12"),
])
def test_export_predict_refuses_what_the_export_cannot_take_in_one_line(runs, name, message):
    result = runs[0][name]
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert re.search(message, result.stderr.strip().splitlines()[-1]), result.stderr[-1000:]


def test_the_tflite_model_answers_as_the_saved_model(runs, saved_export):
    import tensorflow as tf

    from export import tflite
    from tests.export.lite_outputs import assert_lite_equals_saved

    results, root = runs
    _ok(results["tflite"])
    interpreter = tflite.interpreter(model_path=str(root / "motions.tflite"))
    assert sorted(interpreter.get_signature_list()["serving_default"]["inputs"]) == ["features", "lengths"]
    data = np.load(root / "dev.npz")
    features, lengths = data["features"][:4], data["lengths"][:4].astype(np.int32)  # (4, max_time 12, 3)
    lite = interpreter.get_signature_runner("serving_default")(features=features, lengths=lengths)
    saved = saved_export().signatures["serving_default"](features=tf.constant(features),
                                                         lengths=tf.constant(lengths))
    assert_lite_equals_saved(lite, saved, atol=1e-5)


def test_the_dynamic_int8_tflite_model_runs_smaller(runs):
    from export import tflite

    results, root = runs
    _ok(results["tflite_int8"])
    assert (root / "motions_int8.tflite").stat().st_size < (root / "motions.tflite").stat().st_size
    data = np.load(root / "dev.npz")
    inputs = {"features": data["features"][:4], "lengths": data["lengths"][:4].astype(np.int32)}
    lite, reference = (tflite.interpreter(model_path=str(root / name)).get_signature_runner("serving_default")(**inputs)
                       for name in ("motions_int8.tflite", "motions.tflite"))
    np.testing.assert_allclose(lite["probabilities"].sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(lite["logits"], reference["logits"], atol=0.25)  # int8 weights move them a little


def test_an_int8_saved_model_answers_close_to_the_float_one(runs, saved_export):
    import tensorflow as tf

    results, root = runs
    _ok(results["export_int8"])
    data = np.load(root / "dev.npz")
    inputs = {"features": tf.constant(data["features"][:4]), "lengths": tf.constant(data["lengths"][:4], tf.int32)}
    int8 = tf.saved_model.load(str(root / "export_int8" / "1")).signatures["serving_default"](**inputs)
    reference = saved_export().signatures["serving_default"](**inputs)
    np.testing.assert_allclose(int8["probabilities"].numpy().sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(int8["logits"].numpy(), reference["logits"].numpy(), atol=0.25)
