"""tasks.run_classifier end to end, with a tiny model: train, evaluate, predict. The command line, its refusal and
the workers of the multi-worker run run as children of the worker's fork server (`forked_commands`); the other runs
go through the runner in-process (the same `RunConfig` the CLI builds from its flags). A killed run's resume is
`tests/tasks/test_resume_every_entry_point.py`'s."""

import json

import h5py
import numpy as np
import pytest

from tests.tasks.forked_commands import run_forked, run_forked_workers

pytestmark = pytest.mark.slow


def _args(shared_data, checkpoint, model_dir, *extra):
    return ["--task=MRPC", f"--data_dir={shared_data / 'glue' / 'MRPC'}", f"--init_checkpoint={checkpoint}",
            f"--model_dir={model_dir}", "--max_seq_length=32", "--train_batch_size=8", "--eval_batch_size=128",
            *extra]


def _forked(args, out_dir):
    """`python -m tasks.run_classifier <args>` in a child of the fork server: its CompletedProcess."""
    out_dir.mkdir()
    return run_forked([("tasks.run_classifier", args)], out_dir)[0]


def _run_in_process(data_dir, checkpoint, model_dir, task="MRPC", **settings):
    """The runner, in-process, with `_args`' settings unless `settings` replace them."""
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.classification import ClassificationTask

    config = RunConfig(**{"init_checkpoint": str(checkpoint), "model_dir": str(model_dir), "max_seq_length": 32,
                          "train_batch_size": 8, "eval_batch_size": 128, **settings})
    return run(ClassificationTask(task, data_dir=str(data_dir)), config)


def _weights(model_dir):
    values = []
    with h5py.File(model_dir / "model.weights.h5", "r") as f:
        f.visititems(lambda name, item: values.append((name, item[()])) if isinstance(item, h5py.Dataset) else None)
    return dict(values)


@pytest.fixture(scope="module")
def mrpc_run(shared_data, tiny_checkpoint, tmp_path_factory):
    """One CLI run that trains 3 steps, evaluates and predicts: (model_dir, its CompletedProcess)."""
    root = tmp_path_factory.mktemp("cli")
    model_dir = root / "mrpc"
    result = _forked(_args(shared_data, tiny_checkpoint, model_dir, "--num_train_steps=3", "--do_predict"),
                     root / "out")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, result


def test_train_evaluate_predict(shared_data, mrpc_run, tmp_path):
    model_dir, result = mrpc_run
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["num_examples"] == 408
    assert 0.0 <= results["accuracy"] <= 1.0 and 0.0 <= results["f1"] <= 1.0
    assert "eval results:" in result.stdout
    task = json.loads((model_dir / "task.json").read_text())
    assert task["task"] == "MRPC" and task["label_names"] == ["0", "1"] and task["max_seq_length"] == 32
    for name in ("bert_config.json", "vocab.txt", "model.weights.h5", "encoder/model.safetensors"):
        assert (model_dir / name).is_file(), name
    rows = (model_dir / "predictions" / "MRPC.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and len(rows) == 1 + 1725
    assert {row.split("\t")[1] for row in rows[1:]} <= {"0", "1"}
    # The model_dir is a valid --init_checkpoint for a next run (our own checkpoints).
    _run_in_process(shared_data / "glue" / "MRPC", model_dir, tmp_path / "again", num_train_steps=1, do_eval=False)
    assert (tmp_path / "again" / "model.weights.h5").is_file()


def test_examples_that_do_not_fit_are_counted_as_the_tokenizers_library_counts_them(shared_data, tiny_checkpoint,
                                                                                    mrpc_run):
    """At --max_seq_length=32 most MRPC pairs are cut: each split's count is logged, equal to the pairs whose
    pieces (the `tokenizers` library's WordPiece on the same vocab) exceed 32 less [CLS] and two [SEP]."""
    tokenizers = pytest.importorskip("tokenizers")
    from official_bert.data.glue import glue_file_path, read_glue_tsv
    from official_bert.data.glue_tasks import get_glue_task

    tokenizer = tokenizers.BertWordPieceTokenizer(str(tiny_checkpoint / "vocab.txt"), lowercase=True)
    task, data_dir = get_glue_task("MRPC"), str(shared_data / "glue" / "MRPC")
    for split, what in (("train", "training examples"), ("dev", "examples"), ("test", "examples")):
        path = glue_file_path(task, data_dir, split)
        examples = read_glue_tsv(task, path, split)
        pieces = [len(tokenizer.encode(a, b, add_special_tokens=False).ids)
                  for a, b in zip(examples.text_a, examples.text_b)]
        cut, total = sum(n > 32 - 3 for n in pieces), len(pieces)
        assert 0 < cut < total
        line = (f"{cut:,} of {total:,} {what} of {path} ({100 * cut / total:.1f}%) do not fit --max_seq_length=32 "
                "and are cut, the longest text first")
        assert line in mrpc_run[1].stderr, (line, mrpc_run[1].stderr[-3000:])


def test_a_different_run_in_the_same_model_dir_is_refused(shared_data, tiny_checkpoint, mrpc_run, tmp_path):
    model_dir = mrpc_run[0]  # trained with --max_seq_length=32
    result = _forked(_args(shared_data, tiny_checkpoint, model_dir, "--max_seq_length=48"), tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {model_dir} holds another training run: flags.max_seq_length was 32, this run has 48; pass "
        f"--overwrite to start over there, or use another --model_dir")


@pytest.fixture
def op_determinism_restored():
    """--deterministic in-process turns TensorFlow's op determinism on for the process: off again afterwards."""
    from tensorflow.python.framework import config

    enabled = config.is_op_determinism_enabled()
    yield
    if not enabled:
        config.disable_op_determinism()


def test_glue_files_given_as_the_users_own_train_as_the_glue_task(shared_data, tiny_checkpoint, tmp_path,
                                                                   op_determinism_restored):
    """MRPC's TSVs given as `--train_file` / `--eval_file` (their own column names) train bit-identically to
    `--task=MRPC` and evaluate to the same accuracy: the file path inherits the GLUE path's accuracy against
    transformers (docs/accuracy.md)."""
    from official_bert.data.labeled_text_files import Columns
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.file_classification import FileClassificationTask

    settings = {"num_train_steps": 4, "deterministic": True, "seed": 3}
    glue = _run_in_process(shared_data / "glue" / "MRPC", tiny_checkpoint, tmp_path / "glue", **settings)
    mrpc = shared_data / "glue" / "MRPC"
    task = FileClassificationTask(str(mrpc / "train.tsv"), str(mrpc / "dev.tsv"),
                                  columns=Columns("#1 String", "#2 String", "Quality"))
    files = run(task, RunConfig(init_checkpoint=str(tiny_checkpoint), model_dir=str(tmp_path / "files"),
                                max_seq_length=32, train_batch_size=8, eval_batch_size=128, **settings))
    a, b = _weights(tmp_path / "glue"), _weights(tmp_path / "files")
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert files["accuracy"] == glue["accuracy"] and files["num_examples"] == glue["num_examples"] == 408


def _write_stsb(directory, rows):
    """A tiny STS-B in GLUE's column layout (score in the last column)."""
    directory.mkdir(parents=True, exist_ok=True)
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    for split in ("train", "dev"):
        lines = [header] + [f"{i}\tmain-news\tx\t2012\t{i}\tnone\tnone\t{a}\t{b}\t{score}"
                            for i, (a, b, score) in enumerate(rows)]
        (directory / f"{split}.tsv").write_text("\n".join(lines) + "\n")


def test_regression_with_mirrored_strategy_and_bfloat16(tiny_checkpoint, tmp_path):
    rows = [("a man is playing a guitar .", "a man plays the guitar .", 4.8),
            ("a dog runs in the park .", "the stock market fell today .", 0.2),
            ("a woman is slicing onions .", "a woman cuts an onion .", 4.2),
            ("kids are playing football .", "a cat sleeps on the sofa .", 0.6),
            ("the train is late again .", "the train has been delayed .", 3.9),
            ("he is reading a book .", "she is eating soup .", 1.0)] * 3
    _write_stsb(tmp_path / "stsb", rows)
    model_dir = tmp_path / "run"
    _run_in_process(tmp_path / "stsb", tiny_checkpoint, model_dir, task="STS-B", max_seq_length=24,
                    train_batch_size=4, eval_batch_size=64, num_train_steps=3, distribution_strategy="mirrored",
                    mixed_precision="bfloat16")
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert set(results) == {"pearson", "spearman", "num_examples"} and results["num_examples"] == 18
    assert -1.0 <= results["pearson"] <= 1.0
    assert json.loads((model_dir / "task.json").read_text())["num_classes"] == 1


def test_multi_worker_mirrored_only_the_chief_writes(shared_data, tiny_checkpoint, tmp_path):
    model_dir = tmp_path / "run"
    results = run_forked_workers("tasks.run_classifier", _args(
        shared_data, tiny_checkpoint, model_dir, "--num_train_steps=4", "--checkpoint_steps=2",
        "--distribution_strategy=multi_worker_mirrored", "--do_predict"), tmp_path, timeout=500)
    outputs = [result.stdout + result.stderr for result in results]
    for result, output in zip(results, outputs):
        assert result.returncode == 0, output[-3000:]
    for name in ("task.json", "checkpoints/ckpt-4.index", "model.weights.h5", "encoder/model.safetensors",
                 "eval_results.json", "predictions/MRPC.tsv"):
        assert (model_dir / name).is_file(), name
    assert "eval results:" in outputs[0] and "eval results:" not in outputs[1]  # the chief reports
    # The other worker wrote into a temporary directory of its own, and removed it.
    assert not [p for p in (tmp_path / "tmp1").iterdir() if p.name.startswith("official_bert_worker_")]
