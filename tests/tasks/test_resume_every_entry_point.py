"""A `--deterministic` run killed with SIGKILL and started again ends bit-identical to the unbroken run, for every
entry point on the runner (issue 42, defect 2), through the CLI.

Each training set is a few batches an epoch, so the runs cross epoch boundaries: the defect showed only there (each
epoch's order came from a seed generator that Keras' prefetching first-batch iterator advanced by a timing-dependent
amount). Each entry point's run is broken twice, at an epoch boundary and mid-epoch (in the order its test id says; the
orders alternate between entry points), and runs to the end the third time:

    unbroken:  the command, to the end                   -> the reference (the last checkpoints kept); the fork
               server SIGSTOPs it once ckpt-<A> is the latest checkpoint, copies its model dir (the files a SIGKILL
               would leave there then) to a second one, and lets it go on
    resumed:   the same command in the copy (resumes at A), SIGKILLed once ckpt-<B> is the latest
               -> its ckpt-<B> equals the unbroken run's, every variable (the resume at A was exact)
    resumed:   the same command (resumes at B), to the end
               -> every dataset of model.weights.h5 equals the unbroken run's (the resume at B was exact)

Three CLI runs an entry point instead of five for two separately killed runs: a run costs 5 to 20 s on 2 cores
(tracing, XLA kernels, checkpoints). The three run as children of one process that imported TensorFlow once
(`forked_commands`), which stops or SIGKILLs a child as soon as its checkpoint is the latest.

Pre-training's 10,000-record shuffle buffer mixes the records of hundreds of epochs, so its "epoch boundary" is only
a step count there.
"""

import dataclasses
import json
import signal

import h5py
import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked
from pretraining_record_files import PREDICTIONS, SEQ, VOCAB, write_records


@dataclasses.dataclass(frozen=True)
class Case:
    """An entry point's tiny run: `examples` training examples, `batch` a step, `steps` in all; killed after
    checkpoint `kills[0]`, resumed, killed again after checkpoint `kills[1]`, resumed to the end. One kill is at an
    epoch boundary (a multiple of the epoch's steps), the other mid-epoch."""

    module: str
    examples: int
    batch: int
    steps: int
    kills: tuple

    @property
    def epoch(self):
        return self.examples // self.batch  # steps an epoch (every case's examples fill whole batches)

    def where(self, step):
        return "epoch_boundary" if step % self.epoch == 0 else "mid_epoch"

    @property
    def id(self):
        first, second = self.kills
        return (f"{self.module.split('.')[1]}-killed_at_{first}_{self.where(first)}_then_at_{second}_"
                f"{self.where(second)}-{self.steps}_steps_{self.epoch}_an_epoch")


CASES = [
    Case("tasks.run_classifier", examples=32, batch=8, steps=10, kills=(4, 9)),
    Case("tasks.run_ner", examples=32, batch=8, steps=10, kills=(6, 8)),  # 20 sentences, 32 windows
    Case("tasks.run_squad", examples=20, batch=4, steps=12, kills=(5, 11)),  # 4 questions, 20 windows
    Case("tasks.run_multiple_choice", examples=16, batch=4, steps=10, kills=(5, 8)),
    Case("tasks.distill", examples=32, batch=8, steps=10, kills=(8, 9)),
    Case("tasks.prune", examples=24, batch=8, steps=8, kills=(4, 6)),
    Case("tasks.run_pretraining", examples=24, batch=8, steps=8, kills=(3, 7)),  # 2 files of 12 records
]


def _mrpc(shared_data, directory, rows):
    """The first `rows` training pairs of MRPC and 8 dev pairs (GLUE's TSV layout)."""
    directory.mkdir(exist_ok=True)
    for split, count in (("train", rows), ("dev", 8)):
        lines = (shared_data / "glue" / "MRPC" / f"{split}.tsv").read_text(encoding="utf-8-sig").splitlines()
        (directory / f"{split}.tsv").write_text("\n".join(lines[:1 + count]) + "\n", encoding="utf-8")
    return directory


def _conll(shared_data, directory, sentences):
    """The first `sentences` sentences of CoNLL-2003's training file (IOB2), no -DOCSTART- line."""
    directory.mkdir(exist_ok=True)
    text = (shared_data / "conll2003" / "hf-iob2" / "train.txt").read_text(encoding="utf-8")
    blocks = [b for b in text.split("\n\n") if b.strip() and not b.startswith("-DOCSTART-")]
    (directory / "train.txt").write_text("\n\n".join(blocks[:sentences]) + "\n", encoding="utf-8")
    (directory / "test.txt").write_text("\n\n".join(blocks[:4]) + "\n", encoding="utf-8")
    return directory


def _squad(shared_data, path, questions):
    """The first paragraph of SQuAD v1.1's first dev article with its first `questions` questions."""
    article = json.loads((shared_data / "squad" / "v1.1" / "dev-v1.1.json").read_text(encoding="utf-8"))["data"][0]
    paragraph = article["paragraphs"][0]
    squad = {"version": "1.1", "data": [{"title": article["title"],
                                         "paragraphs": [{**paragraph, "qas": paragraph["qas"][:questions]}]}]}
    path.write_text(json.dumps(squad), encoding="utf-8")
    return path


def _multiple_choice(path, rows):
    """`rows` SWAG-like questions: a context, a question, four choices, a label."""
    animals = ["farmer", "cat", "child", "baker", "dog", "queen", "pilot", "sailor"]
    choices = ["It bought bread.", "It flew to the moon.", "Nothing happened.", "It sang a song."]
    lines = [json.dumps({"context": f"Story {i}: the {animals[i % 8]} went to the market.",
                         "question": "What happened next?", "choices": choices[i % 4:] + choices[:i % 4],
                         "label": (3 * i) % 4}) for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pretraining_corpus(directory):
    """Two shards of 12 pre-training records (Google's feature names; random tokens) and a tiny BERT config."""
    directory.mkdir(exist_ok=True)
    for shard in range(2):
        write_records(directory / f"train-{shard}.tfrecord", 12, seed=shard)
    (directory / "config.json").write_text(json.dumps(dict(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=SEQ)))
    return directory


@pytest.fixture(scope="module")
def teacher_dir(shared_data, tmp_path_factory):
    """A random 2-layer MRPC classifier written as `tasks.run_classifier` leaves it (for distill and prune, whose
    1-layer students resume as deeper ones do)."""
    import keras
    from classifier_model_dirs import mrpc_task_info, write_classifier_model_dir

    from official_bert import BertConfig
    from official_bert import model_dir as model_dirs

    keras.utils.set_random_seed(7)
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.5)
    info = mrpc_task_info()
    model = model_dirs.build_task_model(model_dirs.CLASSIFICATION, config, info)
    return write_classifier_model_dir(tmp_path_factory.mktemp("resume_teacher"), model, info,
                                      shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")


def _flags(case, data, request):
    """The entry point's flags (its tiny data written under `data`), without --model_dir."""
    shared_data = request.getfixturevalue("shared_data")
    data.mkdir()
    name = case.module.split(".")[1]
    if name == "run_pretraining":
        corpus = _pretraining_corpus(data / "corpus")
        return [f"--input_files={corpus / 'train-*.tfrecord'}", f"--bert_config_file={corpus / 'config.json'}",
                f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}", "--num_warmup_steps=2",
                "--learning_rate=1e-2", "--log_steps=1"]
    if name in ("distill", "prune"):
        teacher = request.getfixturevalue("teacher_dir")
        flags = [f"--teacher={teacher}", f"--data_dir={_mrpc(shared_data, data / 'mrpc', case.examples)}"]
        if name == "distill":
            return [*flags, "--student_layers=1"]
        # layers and heads cut, kernels magnitude-pruned along the run's steps, the teacher's logits cached
        return [*flags, "--keep_layers=1", "--prune_heads=0.5", "--target_sparsity=0.5", "--importance_examples=8",
                "--cache_teacher"]
    flags = [f"--init_checkpoint={request.getfixturevalue('tiny_checkpoint')}"]
    if name == "run_squad":  # each question in 5 windows
        return [*flags, f"--train_file={_squad(shared_data, data / 'train.json', 4)}", "--max_seq_length=64",
                "--doc_stride=32", "--max_query_length=16"]
    flags.append("--max_seq_length=32")
    if name == "run_classifier":
        return [*flags, "--task=MRPC", f"--data_dir={_mrpc(shared_data, data / 'mrpc', case.examples)}"]
    if name == "run_ner":
        return [*flags, f"--data_dir={_conll(shared_data, data / 'conll', 20)}"]
    return [*flags, f"--train_file={_multiple_choice(data / 'train.jsonl', case.examples)}"]


def _command(case, flags, model_dir, *kill):
    """The whole command for `run_forked` (with an optional kill or copy condition);
    `--keep_checkpoints` keeps the unbroken run's ckpt-<second kill> to the end."""
    return (case.module, [*flags, f"--model_dir={model_dir}", f"--train_batch_size={case.batch}",
                          f"--num_train_steps={case.steps}", "--checkpoint_steps=1",
                          f"--keep_checkpoints={case.steps - case.kills[1] + 1}", "--deterministic",
                          *([] if case.module == "tasks.run_pretraining" else ["--do_eval=false"])], *kill)


def _finished(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr


def _killed_at(result, step):
    """`result` was SIGKILLed by the parent as soon as ckpt-`step` was the latest checkpoint (`<model_dir>/checkpoints/
    checkpoint` names it: a resume reads it; ckpt-K's files land before it names them); returns its log."""
    latest, text = result.latest_checkpoint, result.stderr
    assert latest is None or latest <= step, f"missed ckpt-{step}: ckpt-{latest} was already written"
    assert result.returncode == -signal.SIGKILL, f"the run ended (exit {result.returncode}) before ckpt-{step}:\n" \
                                                 f"{text[-3000:]}"
    assert latest == step, f"the run was killed (latest ckpt-{latest}) before ckpt-{step}"
    assert not (result.model_dir / "model.weights.h5").exists(), "the run finished before it could be killed"
    return text


def _check_resumed(log, model_dir, step):
    assert f"Resumed from {model_dir / 'checkpoints' / f'ckpt-{step}'} (step {step})" in log, log[-3000:]


def _weights(model_dir):
    values = {}
    with h5py.File(model_dir / "model.weights.h5", "r") as f:
        f.visititems(lambda name, item: values.update({name: item[()]}) if isinstance(item, h5py.Dataset) else None)
    return values


def _checkpoint(prefix):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def _assert_bit_identical(unbroken, resumed, what):
    assert unbroken.keys() == resumed.keys(), what
    differing = {name: float(np.max(np.abs(unbroken[name].astype(np.float64) - resumed[name].astype(np.float64))))
                 for name in unbroken if not np.array_equal(unbroken[name], resumed[name])}
    summary = (f"{what}: {len(differing)} of {len(unbroken)} arrays differ, max |difference| "
               f"{max(differing.values(), default=0.0):.3g} (first: {sorted(differing)[:3]})")
    for name in unbroken:
        np.testing.assert_array_equal(resumed[name], unbroken[name], err_msg=f"{name}; {summary}")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_killed_deterministic_run_resumes_bit_identical(case, request, tmp_path):
    first, second = case.kills
    assert 0 < first < second < case.steps and case.examples % case.batch == 0
    assert {case.where(first), case.where(second)} == {"epoch_boundary", "mid_epoch"}
    flags = _flags(case, tmp_path / "data", request)
    unbroken, resumed = tmp_path / "unbroken", tmp_path / "resumed"

    unbroken_run, resumed_killed, resumed_run = run_forked([
        _command(case, flags, unbroken, (unbroken, first, resumed)), _command(case, flags, resumed, (resumed, second)),
        _command(case, flags, resumed)], tmp_path, timeout=1200)

    log = _finished(unbroken_run)
    assert json.loads((unbroken / "run.json").read_text())["flags"]["deterministic"] is True
    if case.module != "tasks.run_pretraining":  # the epoch is the one the case was sized for
        assert f"Training on {case.examples} examples: {case.steps} steps" in log, log[-3000:]

    assert unbroken_run.latest_checkpoint == first, f"copied at ckpt-{unbroken_run.latest_checkpoint}, not {first}"
    log = _killed_at(resumed_killed, second)
    _check_resumed(log, resumed, first)
    name = f"ckpt-{second}"  # as the killed run left it (the parent's copy of its model dir)
    _assert_bit_identical(_checkpoint(unbroken / "checkpoints" / name),
                          _checkpoint(resumed_killed.model_dir / "checkpoints" / name),
                          f"{name} (every variable) after a resume at step {first} ({case.where(first)})")

    log = _finished(resumed_run)
    _check_resumed(log, resumed, second)
    _assert_bit_identical(_weights(unbroken), _weights(resumed),
                          f"model.weights.h5 after a resume at step {second} ({case.where(second)})")
