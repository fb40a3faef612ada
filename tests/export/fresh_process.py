"""Runs exported SavedModels in a process that imports only tensorflow and tensorflow_text (not the project): a child
of the worker's "tensorflow" fork server (`forked_commands.run_python`)."""

import json
import textwrap

import numpy as np

from tests.tasks.forked_commands import run_python

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # registers the two tf-text kernels; nothing of the project is imported
    models = json.load(open(sys.argv[1], encoding="utf-8"))
    for name, spec in models.items():
        model = tf.saved_model.load(spec["dir"])
        calls = dict(spec["signatures"])
        if "examples" in spec:  # serve_examples: tf.Examples with one bytes feature per text input
            features = spec["examples"]
            count = len(next(iter(features.values())))
            calls["serve_examples"] = {"examples": [tf.train.Example(features=tf.train.Features(feature={
                k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v[i].encode("utf-8")]))
                for k, v in features.items()})).SerializeToString() for i in range(count)]}
        out = {}
        for signature, inputs in calls.items():
            function = model.signatures[signature]
            specs = function.structured_input_signature[1]
            tensors = {k: tf.constant(v, dtype=specs[k].dtype) for k, v in inputs.items()}
            out.update({f"{signature}/{k}": v.numpy() for k, v in function(**tensors).items()})
        np.savez(spec["out"], **out)
    print(sorted(m for m in sys.modules if m.split(".")[0] in ("official_bert", "export", "tasks")))
""")


def _write_request(tmp_path, models):
    models = {name: {**spec, "out": str(tmp_path / f"{name}.npz")} for name, spec in models.items()}
    request = tmp_path / "models.json"
    request.write_text(json.dumps(models), encoding="utf-8")
    return models, request


def fresh_process_outputs(tmp_path, models):
    """Calls signatures of SavedModels in a fresh Python process.

    Args:
        tmp_path: a directory for the request and answer files.
        models: name -> {"dir": version directory, "signatures": {signature: {input: list}}, and optionally
            "examples": {feature: list of str} (sent to `serve_examples` as tf.Examples)}.

    Returns:
        name -> {"signature/output": np.ndarray}.
    """
    models, request = _write_request(tmp_path, models)
    result = run_python(["-c", _SCRIPT, request], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"  # no module of the project was imported
    return {name: dict(np.load(spec["out"], allow_pickle=True)) for name, spec in models.items()}


def fresh_process_outputs_and_tool_checks(tmp_path, models, version_dirs):
    """`fresh_process_outputs`, then `session_loader.tool_checks` of `version_dirs`, in the same fresh process:
    (the outputs, the checks)."""
    from session_loader import tool_checks

    models, request = _write_request(tmp_path, models)
    checks, _ = tool_checks(version_dirs, f"import sys\nsys.argv[1:] = [{str(request)!r}]\n{_SCRIPT}")
    return {name: dict(np.load(spec["out"], allow_pickle=True)) for name, spec in models.items()}, checks
