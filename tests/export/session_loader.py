"""Runs exports through TF Serving's loader path, and through `tf.saved_model.load`, in a process that imports only
TensorFlow (a child of the worker's "tensorflow" fork server, `forked_commands.run_python`).

TF Serving's C++ `LoadSavedModel` (and `saved_model_cli run`) restores the variables through the SavedModel's
saver and runs each signature's tensors in a session; `tf.saved_model.load` (TF2) rebuilds the object graph
instead, so an export can answer there and fail in the server. `session_and_eager_outputs` asks both, in a
process that imports only tensorflow, tensorflow_text and tensorflow_serving's protos (nothing of the project),
for every warm-up request the export ships and for raw texts on `serving_default`.

Run as a script: `python session_loader.py REQUEST.json` (see `session_and_eager_outputs`).
"""

import json
import os
import sys

import numpy as np

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def _warmup_requests(version_dir):
    """The export's warm-up requests: list of (signature name, {input: np.ndarray})."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    for record in tf.data.TFRecordDataset(os.path.join(version_dir, WARMUP_FILE)).as_numpy_iterator():
        request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
        requests.append((request.model_spec.signature_name or "serving_default",
                         {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}))
    return requests


def _session_answers(version_dir, requests):
    """Each request answered by the session-based loader: list of {output: np.ndarray} or the error's text."""
    import tensorflow as tf

    answers = []
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        signatures = tf.compat.v1.saved_model.loader.load(session, ["serve"], version_dir).signature_def
        for name, feeds in requests:
            signature = signatures[name]
            fetches = {key: info.name for key, info in signature.outputs.items()}
            try:
                answers.append(session.run(fetches, {signature.inputs[k].name: v for k, v in feeds.items()}))
            except Exception as error:  # every failure is reported, not only the first
                answers.append(f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}")
    return answers


def _eager_answers(version_dir, requests):
    """Each request answered by `tf.saved_model.load`'s signatures: list of {output: np.ndarray}."""
    import tensorflow as tf

    model = tf.saved_model.load(version_dir)
    return [{k: v.numpy() for k, v in model.signatures[name](**{k: tf.constant(v) for k, v in feeds.items()}).items()}
            for name, feeds in requests]


def _text_inputs(version_dir):
    """The input names of `serving_default`, read from the SavedModel's signature."""
    from tensorflow.python.saved_model import loader_impl

    return sorted(loader_impl.parse_saved_model(version_dir).meta_graphs[0].signature_def["serving_default"].inputs)


def _main(request_file):
    import tensorflow_text  # noqa: F401  (registers the tf-text kernels the graphs use)

    with open(request_file, encoding="utf-8") as f:
        request = json.load(f)
    texts = np.array(request["texts"], dtype=object)
    for name, version_dir in request["exports"].items():
        requests = _warmup_requests(version_dir)
        requests.append(("serving_default", {key: texts for key in _text_inputs(version_dir)}))
        session_answers, eager_answers = _session_answers(version_dir, requests), _eager_answers(version_dir, requests)
        arrays, errors = {}, []
        for i, ((signature, _), session_answer, eager_answer) in enumerate(zip(requests, session_answers,
                                                                             eager_answers)):
            if isinstance(session_answer, str):
                errors.append(f"request {i} ({signature}): {session_answer}")
                continue
            for key in eager_answer:
                arrays[f"{i}/{signature}/session/{key}"] = session_answer[key]
                arrays[f"{i}/{signature}/eager/{key}"] = eager_answer[key]
        np.savez(os.path.join(request["out"], f"{name}.npz"), **arrays)
        with open(os.path.join(request["out"], f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump({"requests": [signature for signature, _ in requests], "errors": errors}, f)
    print(sorted(m for m in sys.modules if m.split(".")[0] in ("official_bert", "export", "tasks")))


def session_and_eager_outputs(out_dir, exports, texts):
    """Answers of each export through the session-based loader and through `tf.saved_model.load`.

    Args:
        out_dir: a directory (pathlib.Path) for the request and answer files.
        exports: name -> SavedModel version directory.
        texts: raw strings sent to every text input of `serving_default`, after the warm-up requests.

    Returns:
        name -> {"requests": [signature name per request], "errors": [str per request the session loader
        failed], "outputs": {"<request index>/<signature>/<session|eager>/<output>": np.ndarray}}.
    """
    request_file = out_dir / "request.json"
    request_file.write_text(json.dumps({"exports": exports, "texts": list(texts), "out": str(out_dir)}),
                            encoding="utf-8")
    from tests.tasks.forked_commands import run_python

    result = run_python([__file__, request_file], cwd=out_dir, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"  # no module of the project was imported
    answers = {}
    for name in exports:
        answers[name] = json.loads((out_dir / f"{name}.json").read_text(encoding="utf-8"))
        answers[name]["outputs"] = dict(np.load(out_dir / f"{name}.npz", allow_pickle=True))
    return answers


TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "tools",
                    "session_loader_check.py")
_TOOL_CHECKS = """
import contextlib, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("session_loader_check", {tool!r})
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)
checks = {{}}
for path in {paths!r}:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        checks[path] = [tool.main(path, ["The cat sat on the mat.", "", "naïve café 東京"]), printed.getvalue()]
print(json.dumps(checks))
print(sorted(m for m in sys.modules if m.split(".")[0] in ("official_bert", "export", "tasks")))
"""


def tool_checks(version_dirs, script=""):
    """`../shared/tools/session_loader_check.py` (its `main`, with its default texts) on each version directory,
    all in ONE process that imports nothing of the project (a child of the "tensorflow" fork server), after
    `script` (Python run first in it).

    Returns (version directory -> (exit code, what the check printed), the finished process).
    """
    code = script + "\n" + _TOOL_CHECKS.format(tool=TOOL, paths=[str(path) for path in version_dirs])
    from tests.tasks.forked_commands import run_python

    result = run_python(["-c", code], timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "[]"  # no module of the project was imported
    return {path: tuple(answer) for path, answer in json.loads(lines[-2]).items()}, result


if __name__ == "__main__":
    _main(sys.argv[1])
