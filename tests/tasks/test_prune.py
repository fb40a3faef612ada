"""tasks.prune on the span tasks: a CoNLL tagger and a SQuAD model from a tiny checkpoint lose their least important
layer and half their heads, measured on their own evaluation data, and the result is a model_dir that loads. The
command lines run as children of one process (`forked_commands`): TensorFlow is imported once per batch."""

import json
import re

import numpy as np
import pytest
from tests.conftest import write_tiny_checkpoint
from tests.tasks.forked_commands import run_forked

from official_bert import model_dir as model_dirs
from official_bert.runner import RunConfig, run
from span_task_checks import conll_sentences

pytestmark = pytest.mark.slow
SEQ = 64


def _conll_dir(shared_data, directory):
    directory.mkdir()
    for name, count in (("train.txt", 40), ("test.txt", 20)):
        (directory / name).write_text(conll_sentences(shared_data / "conll2003" / "hf-iob2" / name, count))
    return directory


def _squad_file(shared_data, path):
    data = json.loads((shared_data / "squad" / "v1.1" / "dev-v1.1.json").read_text())
    paragraphs = data["data"][0]["paragraphs"][:4]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return path


def _teacher(task, model_dir, checkpoint):
    config = RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                       train_batch_size=8, eval_batch_size=32, num_train_steps=2, checkpoint_steps=100)
    run(task, config)
    return model_dir


@pytest.fixture(scope="module")
def teachers(shared_data, tmp_path_factory):
    """kind -> (a 2-layer teacher model_dir, its data flags): pruning keeps one of its layers."""
    from official_bert.tasks.squad import SquadTask
    from official_bert.tasks.tagging import TaggingTask

    root = tmp_path_factory.mktemp("prune_teachers")
    tiny_checkpoint = write_tiny_checkpoint(root / "tiny_bert", num_hidden_layers=2, shared_data=shared_data)
    conll = _conll_dir(shared_data, root / "conll")
    squad = _squad_file(shared_data, root / "squad.json")
    return {
        "tagging": (_teacher(TaggingTask(str(conll)), root / "ner", tiny_checkpoint), [f"--data_dir={conll}"]),
        "squad": (_teacher(SquadTask(train_file=str(squad), predict_file=str(squad), doc_stride=32,
                                     max_query_length=16), root / "qa", tiny_checkpoint),
                  [f"--train_file={squad}", f"--predict_file={squad}", "--doc_stride=32", "--max_query_length=16"]),
    }


def test_labeled_eval_batches_of_the_span_tasks(teachers, shared_data, tmp_path):
    from official_bert.labels import IGNORE_LABEL
    from official_bert.tasks.squad import SquadTask
    from official_bert.tasks.tagging import TaggingTask

    tagger = model_dirs.load_model_dir(str(teachers["tagging"][0]))
    batches = list(TaggingTask(str(_conll_dir(shared_data, tmp_path / "conll"))).labeled_eval_batches(tagger, 12, 8))
    inputs, labels = batches[0]
    assert labels.shape == inputs["input_word_ids"].shape and inputs["input_word_ids"].shape[1] == SEQ
    first_pieces = np.asarray(labels) != IGNORE_LABEL
    assert first_pieces.any() and not first_pieces[:, 0].any()  # [CLS] carries no label
    assert sum(len(b[1]) for b in batches) >= 12  # every sentence has a window

    qa = model_dirs.load_model_dir(str(teachers["squad"][0]))
    task = SquadTask(predict_file=str(_squad_file(shared_data, tmp_path / "squad.json")), doc_stride=32,
                     max_query_length=16)
    inputs, targets = next(iter(task.labeled_eval_batches(qa, 6, 64)))
    starts, ends = np.asarray(targets["start_logits"]), np.asarray(targets["end_logits"])
    assert len(starts) == inputs["input_word_ids"].shape[0] > 6  # windows of 6 questions
    assert (starts <= ends).all() and (starts > 0).any()  # answers inside some windows, [CLS] (0) elsewhere


@pytest.fixture(scope="module")
def pruned(teachers, tmp_path_factory):
    """kind -> (CompletedProcess of `python -m tasks.prune` on its teacher, the pruned model_dir)."""
    root = tmp_path_factory.mktemp("pruned")
    commands = [("tasks.prune", [f"--teacher={teacher}", "--keep_layers=1", "--prune_heads=0.5", *data_flags,
                                 f"--model_dir={root / kind}", "--train_batch_size=8", "--eval_batch_size=32",
                                 "--num_train_steps=2", "--importance_examples=8"])
                for kind, (teacher, data_flags) in teachers.items()]
    return {kind: (result, root / kind) for kind, result in zip(teachers, run_forked(commands, root))}


@pytest.mark.parametrize("kind", ["tagging", "squad"])
def test_prune_a_span_task_model_dir(teachers, pruned, kind):
    teacher = teachers[kind][0]
    result, out = pruned[kind]
    assert result.returncode == 0, result.stderr[-3000:]
    importance = json.loads((out / "importance.json").read_text())
    assert len(importance["loss_increase"]) == 2 and len(importance["kept"]) == 1
    assert sum(len(v) for v in importance["removed_heads"].values()) == 2  # half of the kept layer's 4 heads
    loaded = model_dirs.load_model_dir(str(out))
    assert loaded.kind == model_dirs.read_task_info(str(teacher))["kind"]  # the kind load_model_dir gives
    assert loaded.config.num_hidden_layers == 1 and loaded.config.num_kept_heads(0) == 2
    assert (out / "eval_results.json").exists()


def test_flags_that_prune_nothing_are_refused_before_anything_runs(shared_data, tmp_path):
    """`--prune_heads=0` (or no pruning flag, or `--keep_layers` of every layer, or a share of the heads that rounds
    to none) would train a full copy of the teacher: refused, naming the flag, and no model_dir is written."""
    import keras
    from classifier_model_dirs import mrpc_task_info, write_classifier_model_dir

    from official_bert import BertConfig

    keras.utils.set_random_seed(6)
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64)
    info = mrpc_task_info()
    teacher = write_classifier_model_dir(tmp_path / "teacher", model_dirs.build_task_model(
        model_dirs.CLASSIFICATION, config, info), info, shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")
    out = tmp_path / "pruned"
    cases = (
            (["--prune_heads=0"], r"--prune_heads=0 prunes nothing: the run would train a full copy of the teacher; "
                                  r"pass --prune_heads \(a share of the heads in \(0, 1\)\), --keep_layers \(fewer "
                                  r"than 2\) or --target_sparsity"),
            ([], "nothing to prune: the run would train a full copy"),
            (["--keep_layers=2", "--prune_heads=0"], "--prune_heads=0 prunes nothing; --keep_layers=2 keeps every "
                                                     "layer of the 2-layer teacher: the run would train a full copy"),
            (["--prune_heads=0.05"], r"--prune_heads=0.05 of the 8 heads rounds to none: nothing would be pruned; "
                                     r"pass a share of at least 0.125 \(one head\)"))
    (tmp_path / "runs").mkdir()
    results = run_forked([("tasks.prune", [f"--teacher={teacher}", *flags,
                                           f"--data_dir={shared_data / 'glue' / 'MRPC'}", f"--model_dir={out}",
                                           "--num_train_steps=1", "--importance_examples=8"])
                          for flags, _ in cases], tmp_path / "runs")
    for (flags, message), result in zip(cases, results):
        assert result.returncode != 0, flags
        assert re.search(message, result.stderr), result.stderr[-2000:]
        assert "Traceback" not in result.stderr and not out.exists()
