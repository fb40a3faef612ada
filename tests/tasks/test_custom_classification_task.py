"""A classification task of the user's, not in GLUE's table (its own TSV columns and labels), defined here with the
library as it is: trained in-process, exported, and served from raw text, in TF2 and through TF Serving's loader."""

import json

import numpy as np
import pytest
import tensorflow as tf

from export.saved_model import export
from official_bert.data.glue_tasks import Column, GlueTask, TsvLayout
from official_bert.runner import RunConfig, run
from official_bert.tasks.classification import ClassificationTask
from tests.tasks.forked_commands import run_python

pytestmark = pytest.mark.slow

LABELS = ("bad", "meh", "good")
WORDS = {"bad": "awful dull broken", "meh": "fine okay average", "good": "great lovely superb"}
REVIEWS = GlueTask(
    name="REVIEWS", label_names=LABELS, is_regression=False, is_pair=False, metric_names=("accuracy",),
    split_files={"train": ("reviews_train.tsv",), "dev": ("reviews_dev.tsv",)},
    tfds_name=None, tfds_splits={}, tfds_text_features=("review", None), tfds_label_order=LABELS,
    labeled_layout=TsvLayout(True, Column("review", 1), None, Column("verdict", 0), None, None),
    test_layout=TsvLayout(True, Column("review", 0), None, None, None, None))


def _write_reviews(path, rows):
    """A TSV with the columns `verdict` and `review`, in that order."""
    path.write_text("verdict\treview\n" + "".join(f"{label}\t{text}\n" for label, text in rows), encoding="utf-8")


def test_a_task_not_in_glue_trains_exports_and_serves_raw_text(tiny_checkpoint, shared_data, tmp_path):
    rows = [(label, f"the film was {WORDS[label].split()[i % 3]}") for i in range(12) for label in LABELS]
    _write_reviews(tmp_path / "reviews_train.tsv", rows)
    _write_reviews(tmp_path / "reviews_dev.tsv", rows[:6])
    model_dir = tmp_path / "reviews"
    task = ClassificationTask(REVIEWS, data_dir=str(tmp_path), text_features=("review",))

    results = run(task, RunConfig(model_dir=str(model_dir), init_checkpoint=str(tiny_checkpoint), max_seq_length=16,
                                  train_batch_size=8, eval_batch_size=8, num_train_steps=3))
    assert results["num_examples"] == 6 and 0.0 <= results["accuracy"] <= 1.0
    info = json.loads((model_dir / "task.json").read_text(encoding="utf-8"))
    assert info["task"] == "REVIEWS" and info["label_names"] == list(LABELS)
    assert info["text_features"] == ["review"]  # recorded: the export needs no table to know the inputs

    version_dir = export(str(model_dir), str(tmp_path / "export"))
    served = tf.saved_model.load(version_dir).signatures["serving_default"]
    answer = served(review=tf.constant(["the film was lovely", "the film was broken and dull"]))
    assert answer["probabilities"].shape == (2, 3)
    assert set(answer["label"].numpy().astype(str)) <= set(LABELS)
    np.testing.assert_allclose(answer["probabilities"].numpy().sum(axis=-1), 1.0, rtol=1e-5)
    assert (tmp_path / "export" / "1" / "assets" / "labels.txt").read_text(encoding="utf-8").split() == list(LABELS)

    # TF Serving's session loader answers every warm-up request and raw text on the `review` input
    check = run_python([shared_data.parent / "tools" / "session_loader_check.py", version_dir, "the film was okay"],
                       timeout=300)
    assert check.returncode == 0 and "FAILED" not in check.stdout, check.stdout[-2000:] + check.stderr[-2000:]
    assert "serving_default on raw text: {" in check.stdout
