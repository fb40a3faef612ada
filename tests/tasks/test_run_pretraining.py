"""tasks.run_pretraining end to end through the CLI with a tiny model: train, evaluate, MirroredStrategy over two
logical CPUs equal to one device, MultiWorkerMirroredStrategy with two processes, dynamic masking from raw text.
Runs that prove nothing more through a new process (dynamic masking, a bad glob) go through the runner
in-process, with the task and settings the CLI builds. A resume after SIGKILL is
`tests/tasks/test_resume_every_entry_point.py`'s."""

import json
import logging
import os
import re

import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked_workers, run_python
from pretraining_record_files import PREDICTIONS, SEQ, VOCAB, write_records

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two training shards, one eval file, and tiny BERT configs (with and without dropout)."""
    root = tmp_path_factory.mktemp("pretraining_corpus")
    write_records(root / "train-0.tfrecord", 48, seed=0)
    write_records(root / "train-1.tfrecord", 48, seed=1)
    write_records(root / "eval.tfrecord", 40, seed=2)
    tiny = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                max_position_embeddings=SEQ)
    (root / "config.json").write_text(json.dumps(tiny))
    (root / "config_no_dropout.json").write_text(json.dumps(
        {**tiny, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}))
    return root


def _args(corpus, model_dir, *extra, config="config.json"):
    return [f"--input_files={corpus / 'train-*.tfrecord'}", f"--bert_config_file={corpus / config}",
            f"--model_dir={model_dir}", "--train_batch_size=8", f"--max_seq_length={SEQ}",
            f"--max_predictions_per_seq={PREDICTIONS}", "--num_warmup_steps=2", "--learning_rate=1e-2",
            "--log_steps=1", *extra]


def _run_in_process(config, **task_settings):
    """`tasks.run_pretraining`'s task and run, in-process: `config` is `RunConfig` fields (the entry point's own
    defaults unless given), `task_settings` the task's."""
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.pretraining import PretrainingTask

    defaults = dict(learning_rate=1e-4, eval_batch_size=32, num_train_steps=100000, checkpoint_steps=1000,
                    do_eval=False, do_predict=False)
    return run(PretrainingTask(**task_settings), RunConfig(**{**defaults, **config}))


def _in_process_settings(corpus, model_dir, config="config.json", **extra):
    """`_args`'s flags as (RunConfig fields, task settings), less `--input_files`."""
    return ({"model_dir": str(model_dir), "train_batch_size": 8, "max_seq_length": SEQ, "learning_rate": 1e-2,
             **extra},
            {"bert_config_file": str(corpus / config), "max_predictions_per_seq": PREDICTIONS, "num_warmup_steps": 2,
             "log_steps": 1})


def _step_losses(log):
    """(step, loss) of every `step k/N: ... loss=X` log line, in order."""
    return [(int(m.group(1)), float(m.group(2))) for m in re.finditer(r"step (\d+)/\d+: .*?\bloss=([-\d.]+)", log)]


def _tensors(directory):
    from safetensors.numpy import load_file

    return load_file(os.path.join(directory, "model.safetensors"))


# Runs the CLI's main on two logical CPU devices, once per strategy in $STRATEGIES, into <model_dir>/<strategy>.
_TWO_CPUS = """
import logging, os, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from absl import flags
from tasks import run_pretraining
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
flags.FLAGS(sys.argv)
base = flags.FLAGS.model_dir
for strategy in os.environ["STRATEGIES"].split(","):
    flags.FLAGS.distribution_strategy = strategy
    flags.FLAGS.model_dir = f"{base}/{strategy}"
    run_pretraining.main(None)
"""


def _two_cpus(corpus, model_dir, strategies):
    """The command and environment of a `_TWO_CPUS` run (8 steps, a checkpoint every step, eval on 40 records)."""
    args = _args(corpus, model_dir, "--num_train_steps=8", "--checkpoint_steps=1", "--do_eval",
                 f"--eval_files={corpus / 'eval.tfrecord'}", "--eval_batch_size=8", config="config_no_dropout.json")
    return ["-c", _TWO_CPUS, *args], {**os.environ, "STRATEGIES": strategies}


@pytest.fixture(scope="module")
def reference_runs(corpus, tmp_path_factory):
    """One unbroken run on one device and one on two mirrored replicas (same flags, dropout 0), and their log."""
    base = tmp_path_factory.mktemp("reference_runs")
    command, env = _two_cpus(corpus, base, "one_device,mirrored")
    result = run_python(command, env=env, timeout=600)  # a child of a process that imported TensorFlow alone
    assert result.returncode == 0, result.stderr[-3000:]
    return base, result.stderr


def test_train_and_evaluate_outputs(reference_runs):
    from official_bert import BertConfig, BertEncoder
    from official_bert.checkpoints import load_pretrainer_weights
    from official_bert.models.pretrainer import BertPretrainer

    base, log = reference_runs
    run = base / "one_device"
    for name in ("bert_config.json", "task.json", "train_results.json", "model.weights.h5", "eval_results.json",
                 "encoder/model.safetensors", "pretrainer/model.safetensors", "checkpoints/ckpt-8.index"):
        assert (run / name).is_file(), name
    assert "masked_lm_accuracy=" in log and "next_sentence_accuracy=" in log
    assert "ran out of data" not in log  # Keras' warning at the end of the (finite) evaluation stream
    assert os.listdir(run / "logs" / "train"), "no TensorBoard events"
    results = json.loads((run / "eval_results.json").read_text())
    assert results["examples"] == 40 and results["global_step"] == 8
    assert 40 <= results["masked_lm_predictions"] <= 40 * PREDICTIONS
    assert 0 <= results["masked_lm_accuracy"] <= 1 and 0 <= results["next_sentence_accuracy"] <= 1
    assert results["masked_lm_loss"] > 0 and results["next_sentence_loss"] > 0
    train = json.loads((run / "train_results.json").read_text())
    assert train["steps"] == 8
    assert train["final_loss"] == pytest.approx(_step_losses(log)[7][1], abs=1e-4)  # the last step's logged loss
    assert json.loads((run / "task.json").read_text())["max_predictions_per_seq"] == PREDICTIONS
    pretrainer = BertPretrainer(BertEncoder(BertConfig.from_json_file(run / "bert_config.json")))
    assert load_pretrainer_weights(pretrainer, run / "pretrainer") == {"masked_lm": True, "next_sentence": True}


def test_mirrored_over_two_cpus_gives_the_loss_of_one_device(reference_runs):
    """Same global batch on one device and split over two replicas (dropout 0): the same loss at every step,
    the same weights and eval figures. The replicas hold different numbers of masked tokens, so this needs the
    global masked-LM mean, and gradient clipping on the summed gradient."""
    base, log = reference_runs
    assert "on 1 replica(s), one_device" in log and "on 2 replica(s), mirrored" in log
    losses = _step_losses(log)
    assert [step for step, _ in losses] == list(range(1, 9)) * 2
    # the log prints 4 decimals: equal losses may round one unit of the last digit apart
    np.testing.assert_allclose([loss for _, loss in losses[8:]], [loss for _, loss in losses[:8]], rtol=0, atol=1e-4)
    assert losses[0][1] != pytest.approx(losses[7][1], rel=1e-3), "the weights did not move"
    single, mirrored = _tensors(base / "one_device" / "pretrainer"), _tensors(base / "mirrored" / "pretrainer")
    for name in single:
        np.testing.assert_allclose(mirrored[name], single[name], atol=2e-5, err_msg=name)
    one = json.loads((base / "one_device" / "eval_results.json").read_text())
    two = json.loads((base / "mirrored" / "eval_results.json").read_text())
    assert one["examples"] == two["examples"] == 40 and one["masked_lm_predictions"] == two["masked_lm_predictions"]
    for key in ("loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss", "next_sentence_accuracy"):
        assert two[key] == pytest.approx(one[key], abs=1e-5), key


def test_multi_worker_mirrored_with_two_processes_trains_and_checkpoints(corpus, tmp_path):
    model_dir = tmp_path / "run"
    results = run_forked_workers("tasks.run_pretraining", _args(
        corpus, model_dir, "--num_train_steps=4", "--checkpoint_steps=2", "--keep_checkpoints=2",
        "--distribution_strategy=multi_worker_mirrored"), tmp_path, timeout=400)
    outputs = [result.stdout + result.stderr for result in results]
    for result, output in zip(results, outputs):
        assert result.returncode == 0, output[-3000:]
        assert "on 2 replica(s), multi_worker_mirrored" in output
    # Both workers trained the same steps in lockstep, on one global batch.
    assert _step_losses(outputs[0]) == _step_losses(outputs[1]) and len(_step_losses(outputs[0])) == 4
    # Only the chief wrote the run's files; the other worker's temporary directory is gone.
    for name in ("checkpoints/ckpt-2.index", "checkpoints/ckpt-4.index", "train_results.json",
                 "pretrainer/model.safetensors", "encoder/model.safetensors", "model.weights.h5"):
        assert (model_dir / name).is_file(), name
    assert json.loads((model_dir / "train_results.json").read_text())["steps"] == 4
    assert not [p for p in (tmp_path / "tmp1").iterdir() if p.name.startswith("official_bert_worker_")]


def test_dynamic_masking_from_text_files_continuing_a_checkpoint(shared_data, tiny_checkpoint, tmp_path, caplog):
    """Raw text, masked on the fly, into an HF BertModel directory (no heads: they start fresh)."""
    with open(shared_data / "squad" / "v1.1" / "dev-v1.1.json", encoding="utf-8") as f:
        articles = json.load(f)["data"][:2]
    lines = []
    for article in articles:  # one document per paragraph, one sentence per line
        for paragraph in article["paragraphs"][:4]:
            lines += [s.strip() + "." for s in paragraph["context"].split(". ") if s.strip()] + [""]
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(lines), encoding="utf-8")
    model_dir = tmp_path / "run"
    caplog.set_level(logging.INFO)
    _run_in_process(dict(init_checkpoint=str(tiny_checkpoint), model_dir=str(model_dir), train_batch_size=8,
                         max_seq_length=64, num_train_steps=2, do_eval=True, eval_batch_size=8),
                    text_files=str(text), max_predictions_per_seq=10, num_warmup_steps=1, log_steps=1,
                    eval_files=str(text), max_eval_steps=1)
    assert "masked-LM head freshly initialised, next-sentence head freshly initialised" in caplog.text
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["examples"] == 8 and results["masked_lm_predictions"] > 8
    assert (model_dir / "vocab.txt").read_text() == (tiny_checkpoint / "vocab.txt").read_text()
    assert (model_dir / "encoder" / "vocab.txt").is_file()


def test_a_glob_matching_nothing_is_an_error(corpus, tmp_path):
    config, task = _in_process_settings(corpus, tmp_path, num_train_steps=1)
    with pytest.raises(ValueError) as error:  # the CLI's one-line error, exit 2 (official_bert.cli.run_main)
        _run_in_process(config, input_files=str(tmp_path / "missing-*.tfrecord"), **task)
    assert f"--input_files: no file matches '{tmp_path / 'missing-*.tfrecord'}'" in str(error.value)


def _tiny_vocab(directory):
    """A WordPiece vocab of the tiny config's VOCAB entries."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(VOCAB - 5)]
    (directory / "vocab.txt").write_text("\n".join(words) + "\n")
    return str(directory / "vocab.txt")


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf\n"], ids=["empty", "blank-lines", "bom-only"])
def test_text_files_without_text_are_an_error_before_anything_is_written(corpus, tmp_path, content):
    """Training would wait forever for a first batch."""
    (tmp_path / "empty.txt").write_bytes(content)
    config, task = _in_process_settings(corpus, tmp_path / "run", num_train_steps=1, vocab_file=_tiny_vocab(tmp_path))
    with pytest.raises(ValueError, match=r"--text_files: .*empty.txt holds no text \(empty, or blank lines only\)"):
        _run_in_process(config, text_files=str(tmp_path / "empty.txt"), **task)
    assert not (tmp_path / "run").exists()


def test_text_files_not_utf8_are_an_error_naming_the_line_before_anything_is_written(corpus, tmp_path):
    (tmp_path / "a.txt").write_text("One sentence.\nAnother one.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes("First line.\n\nA caf\u00e9 in Latin-1.\n".encode("latin-1"))
    config, task = _in_process_settings(corpus, tmp_path / "run", num_train_steps=1, vocab_file=_tiny_vocab(tmp_path))
    with pytest.raises(ValueError, match=r"b.txt:3: not UTF-8 text \(byte 0xe9 at column 6\)"):
        _run_in_process(config, text_files=f"{tmp_path / 'a.txt'},{tmp_path / 'b.txt'}", **task)
    assert not (tmp_path / "run").exists()


def test_record_files_without_a_record_or_of_other_shapes_are_an_error_before_anything_is_written(corpus, tmp_path):
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    config, task = _in_process_settings(corpus, tmp_path / "run", num_train_steps=1)
    with pytest.raises(ValueError, match=r"--input_files: .*empty.tfrecord holds no record"):
        _run_in_process(config, input_files=str(tmp_path / "empty.tfrecord"), **task)
    config, task = _in_process_settings(corpus, tmp_path / "run", num_train_steps=1, max_seq_length=SEQ // 2)
    with pytest.raises(ValueError, match=r"train-0.tfrecord: feature 'input_ids' of the first record"):
        _run_in_process(config, input_files=str(corpus / "train-0.tfrecord"), **task)
    assert not (tmp_path / "run").exists()


def test_steps_per_loop_below_one_is_refused_in_one_line():
    """`--steps_per_loop=0` would divide the run's steps by zero: refused when the task is made, as the time-series
    task refuses it."""
    from official_bert.tasks.pretraining import PretrainingTask

    for value in (0, -2):
        with pytest.raises(ValueError, match=f"--steps_per_loop must be at least 1, got {value}"):
            PretrainingTask(input_files="unused-*.tfrecord", preset="bert_tiny", steps_per_loop=value)


@pytest.mark.parametrize("flag,settings", [("num_train_steps", {"num_train_steps": 10}),
                                           ("checkpoint_steps", {"num_train_steps": 8, "checkpoint_steps": 6})])
def test_steps_per_loop_must_divide_the_runs_steps_checkpoints_and_log_lines(flag, settings):
    """A call of 4 steps would run past step 10 (or checkpoint between 6 and 8): refused before anything runs."""
    from official_bert.run_config import RunConfig
    from official_bert.tasks.pretraining import PretrainingTask

    task = PretrainingTask(input_files="unused-*.tfrecord", preset="bert_tiny", steps_per_loop=4, log_steps=4)
    with pytest.raises(ValueError, match=f"--{flag}=.* must be a multiple of --steps_per_loop=4"):
        task.validate(RunConfig(model_dir="unused", do_eval=False, **{"checkpoint_steps": 4, **settings}))
