"""benchmarks.feature_based_ner, small: 130 CoNLL-2003 sentences, two of the paper's feature sets, and a
rerun that resumes from the cached features and results."""

import json
import sys
import tempfile

import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow


def _flags(out):
    return [f"--out={out}", "--max_train_sentences=100", "--max_eval_sentences=30", "--lstm_units=8", "--epochs=1",
            "--configs=second_to_last_hidden,weighted_sum_last_four", "--no-finetune"]


def _run(out):
    with tempfile.TemporaryDirectory() as outputs:  # the child's stdout and stderr, kept out of --out
        (result,) = run_forked([("benchmarks.feature_based_ner", _flags(out))], outputs)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _run_in_process(out, monkeypatch, capsys):
    """The same command line through the module's `main` (the forked run above proves the CLI itself)."""
    from benchmarks import feature_based_ner

    monkeypatch.setattr(sys, "argv", ["feature_based_ner", *_flags(out)])
    capsys.readouterr()
    feature_based_ner.main()
    return capsys.readouterr().out


def test_small_table_and_resume(tmp_path, shared_data, monkeypatch, capsys):
    first = _run(tmp_path)
    assert "features of train: 100 sentences" in first
    table = first[first.index("CoNLL-2003 entity F1"):].splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in table[2:]}
    assert rows["second_to_last_hidden"][0] == "95.6" and rows["embeddings"][1:] == ["-", "-"]
    results = {}
    for name in ("second_to_last_hidden", "weighted_sum_last_four"):
        results[name] = json.loads((tmp_path / "results" / f"{name}.json").read_text())
        assert 0 <= results[name]["valid_f1"] <= 100 and results[name]["train_sentences"] == 100
        assert float(rows[name][1]) == pytest.approx(results[name]["valid_f1"], abs=0.01)
    assert len(results["weighted_sum_last_four"]["layer_weights"]) == 4
    features = np.load(tmp_path / "features" / "train.npy", mmap_mode="r")
    assert features.shape[1:] == (7, 384) and features.dtype == np.float32

    again = _run_in_process(tmp_path, monkeypatch, capsys)  # everything cached: no extraction, no training, the same table
    assert "features of" not in again and "Epoch" not in again
    assert again[again.index("CoNLL-2003 entity F1"):] == first[first.index("CoNLL-2003 entity F1"):]
