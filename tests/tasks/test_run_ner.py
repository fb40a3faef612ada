"""tasks.run_ner end to end through the CLI with a tiny model on a few hundred CoNLL-2003 sentences. Its three
command lines run as children of one process (`forked_commands`): TensorFlow is imported once; the IOB1
re-evaluation of the trained model_dir runs in-process (the runner, as the CLI calls it)."""

import json
import re

import pytest
from tests.tasks.forked_commands import run_forked

from official_bert.data.conll import read_conll

pytestmark = pytest.mark.slow
LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def _head(source, target, sentences):
    """The first `sentences` sentences of a CoNLL file (its -DOCSTART- lines kept)."""
    lines, seen = [], 0
    for line in source.read_text().splitlines():
        lines.append(line)
        if not line.strip() and lines[-2:-1] and lines[-2].strip() and not lines[-2].startswith("-DOCSTART-"):
            seen += 1
            if seen == sentences:
                break
    target.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def small_conll(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("conll")
    for layout, files in (("hf-iob2", ("train.txt", "test.txt")), ("original-iob1", ("eng.train", "eng.testb"))):
        (root / layout).mkdir()
        for name, count in zip(files, (300, 120)):
            _head(shared_data / "conll2003" / layout / name, root / layout / name, count)
    return root


def _args(*args):
    return ["--max_seq_length=24", "--train_batch_size=16", "--eval_batch_size=128", *args]


@pytest.fixture(scope="module")
def runs(small_conll, tiny_checkpoint, tmp_path_factory):
    """The four command lines: (root, [CompletedProcess]): a run that trains, evaluates and predicts; a test tag
    outside the label set; a predict text file that is not UTF-8; the first's model_dir tagging the text file alone,
    without --data_dir."""
    root = tmp_path_factory.mktemp("ner_runs")
    model_dir, texts = root / "ner", root / "texts.txt"
    texts.write_text("Peter Blackburn flew to Brussels.\nNo entities here\n")
    data = root / "data"
    data.mkdir()
    (data / "train.txt").write_text((small_conll / "hf-iob2" / "train.txt").read_text())
    (data / "test.txt").write_text("EU B-ORG\nrejects O\n\nParis B-GPE\n")
    latin1 = root / "latin1.txt"
    latin1.write_bytes(b"Peter Blackburn flew to Brussels.\nZ\xfcrich is in Switzerland.\n")  # Latin-1
    commands = [
        _args(f"--data_dir={small_conll / 'hf-iob2'}", f"--init_checkpoint={tiny_checkpoint}",
              f"--model_dir={model_dir}", "--num_train_steps=4", "--do_predict", f"--predict_text_file={texts}"),
        _args(f"--data_dir={data}", f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={root / 'm'}",
              "--num_train_steps=1"),
        _args(f"--data_dir={small_conll / 'hf-iob2'}", f"--init_checkpoint={tiny_checkpoint}",
              f"--model_dir={root / 'never'}", "--num_train_steps=1", "--do_predict", f"--predict_text_file={latin1}"),
        _args(f"--model_dir={model_dir}", "--do_train=false", "--do_eval=false", "--do_predict",
              f"--predict_text_file={texts}", f"--output_dir={root / 'texts_only'}"),
    ]
    out = root / "out"
    out.mkdir()
    return root, run_forked([("tasks.run_ner", args) for args in commands], out)


def test_train_evaluate_predict_and_reevaluate_iob1(small_conll, runs):
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.tagging import TaggingTask

    root, (result, _, _, _) = runs
    model_dir = root / "ner"
    assert result.returncode == 0, result.stderr[-3000:]
    assert "eval results (test):" in result.stdout
    assert "tagged 120/120 sentences, " in result.stderr and "tagged 2/2 texts, " in result.stderr  # progress lines
    task = json.loads((model_dir / "task.json").read_text())
    assert task["label_names"] == LABELS and task["max_seq_length"] == 24 and task["task"] == "ner"
    results = json.loads((model_dir / "eval_results.json").read_text())
    test = read_conll(str(small_conll / "hf-iob2" / "test.txt"))
    assert results["num_sentences"] == len(test) == 120 and results["split"] == "test"
    assert results["num_true"] == sum(s["support"] for t, s in results["per_type"].items())
    assert 0.0 <= results["f1"] <= 1.0
    train = json.loads((model_dir / "train_results.json").read_text())
    assert train["steps"] == 4
    for name in ("bert_config.json", "vocab.txt", "model.weights.h5", "encoder/model.safetensors"):
        assert (model_dir / name).is_file(), name

    # predictions: one "word gold predicted" line per word (every word of windowed sentences too)
    blocks = (model_dir / "predictions" / "test.txt").read_text().split("\n\n")
    rows = [[line.split(" ") for line in block.splitlines()] for block in blocks if block.strip()]
    assert [[r[0] for r in block] for block in rows] == test.words
    assert [[r[1] for r in block] for block in rows] == test.tags
    assert {r[2] for block in rows for r in block} <= set(LABELS)
    lines = (model_dir / "predictions" / "texts.jsonl").read_text().splitlines()
    assert [json.loads(line)["text"] for line in lines] == ["Peter Blackburn flew to Brussels.", "No entities here"]
    for line in lines:
        record = json.loads(line)
        for entity in record["entities"]:
            assert record["text"][entity["start"]:entity["end"]] == entity["text"]
            assert entity["type"] in {"LOC", "MISC", "ORG", "PER"}

    # Evaluation only, on the IOB1 copy: converted tags equal the IOB2 file, so the same scores.
    run(TaggingTask(str(small_conll / "original-iob1"), "iob1"),
        RunConfig(init_checkpoint=str(model_dir), model_dir=str(model_dir), max_seq_length=24, eval_batch_size=128,
                  do_train=False))
    assert json.loads((model_dir / "eval_results.json").read_text()) == results


def test_a_test_tag_outside_the_label_set_is_an_error_naming_the_line(runs):
    root, (_, result, _, _) = runs
    data = root / "data"
    assert result.returncode != 0
    assert f"{data / 'test.txt'}:4: tag 'B-GPE' is not in the label set" in result.stderr


def test_a_predict_text_file_that_is_not_utf8_is_one_line_before_training(runs):
    root, (_, _, result, _) = runs
    texts, model_dir = root / "latin1.txt", root / "never"
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (f"error: {texts}:2: not UTF-8 text (byte 0xfc at column 2); "
                                                      f"save the file as UTF-8")
    assert not model_dir.exists()


def test_a_trained_model_dir_tags_a_text_file_without_data_dir(runs):
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.tagging import TaggingTask

    root, (_, _, _, result) = runs
    assert result.returncode == 0, result.stderr[-3000:]
    out = root / "texts_only" / "predictions"
    assert sorted(p.name for p in out.iterdir()) == ["texts.jsonl"]  # no split predicted
    assert (out / "texts.jsonl").read_text() == (root / "ner" / "predictions" / "texts.jsonl").read_text()
    tagged = [line for line in result.stderr.splitlines() if "] tagged " in line]  # progress lines: texts only
    assert tagged and all(" texts, " in line for line in tagged)
    # what needs the data says so, before reading anything
    texts = str(root / "texts.txt")
    for task, config, message in [
            (TaggingTask(None, predict_text_file=texts), RunConfig(model_dir=str(root / "ner"), do_train=False),
             "--data_dir is required to train, evaluate or predict the eval split"),
            (TaggingTask(None), RunConfig(model_dir=str(root / "ner"), do_train=False, do_eval=False,
                                          do_predict=True), "--data_dir is required to train, evaluate or predict"),
            (TaggingTask(None, predict_text_file=texts), RunConfig(model_dir=str(root / "none"), do_train=False,
                                                                   do_eval=False, do_predict=True),
             re.escape(f"--data_dir is required: --model_dir={root / 'none'} holds no trained run"))]:
        with pytest.raises(ValueError, match=message):
            run(task, config)


def test_a_missing_predict_text_file_is_named_with_its_flag(tmp_path):
    from official_bert.tasks.tagging import TaggingTask

    with pytest.raises(FileNotFoundError, match=r"^--predict_text_file=.*nothere.txt: no such file$"):
        TaggingTask(None, predict_text_file=str(tmp_path / "nothere.txt"))._predict_texts()
