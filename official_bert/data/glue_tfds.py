"""GLUE examples from tensorflow-datasets: a prepared `glue/<task>` dataset (downloaded when asked), its records
converted to the same `GlueExamples` as the TSV reader gives, labels in the task's order."""

import logging
from typing import Iterable, Mapping, Optional

import numpy as np

from official_bert.data.glue import GlueExamples
from official_bert.data.glue_rows import STSB_SCORE_RANGE
from official_bert.data.glue_tasks import get_glue_task
from official_bert.data.tfds_records import to_str


def examples_from_tfds(task, split: str, records: Iterable[Mapping], label_names=None,
                       source: str = "") -> GlueExamples:
    """Converts TFDS GLUE records (dicts of NumPy values, as `tfds.as_numpy` yields) to `GlueExamples`.

    Args:
        task: a task name or `GlueTask`.
        split: our split name (or its TFDS alias, e.g. "validation_matched").
        records: dicts with the task's TFDS text features (bytes or str), `label` and `idx`.
        label_names: the dataset's ClassLabel names, checked against the task's expected TFDS order;
            None skips the check.
        source: recorded in the result.

    Raises:
        ValueError: a label outside the task's label set (-1 in a labeled split included), or
            `label_names` that do not match the task.
    """
    task = get_glue_task(task)
    split = task.canonical_split(split)
    labeled = task.is_labeled(split)
    order = task.tfds_label_order
    if label_names is not None and not task.is_regression and len(label_names) != len(order):
        raise ValueError(f"{source or task.tfds_name}: {len(label_names)} label names {list(label_names)}, "
                         f"expected {len(order)} for {task.name}")
    to_index = [task.label_names.index(name) for name in order]
    feature_a, feature_b = task.tfds_text_features
    text_a, text_b, labels, ids = [], [] if feature_b else None, [] if labeled else None, []
    for n, record in enumerate(records):
        text_a.append(to_str(record[feature_a]))
        if feature_b:
            text_b.append(to_str(record[feature_b]))
        ids.append(int(record.get("idx", n)))
        if labels is None:
            continue
        label = record["label"]
        if task.is_regression:
            score = float(label)
            if not STSB_SCORE_RANGE[0] <= score <= STSB_SCORE_RANGE[1]:
                raise ValueError(f"{source or task.tfds_name} example {n}: score {score} is not in [0, 5]")
            labels.append(score)
        else:
            label = int(label)
            if not 0 <= label < len(order):
                raise ValueError(f"{source or task.tfds_name} example {n}: label {label} is not a "
                                 f"{task.name} class index (0..{len(order) - 1})")
            labels.append(to_index[label])
    label_dtype = np.float32 if task.is_regression else np.int64
    return GlueExamples(task=task.name, split=split, text_a=text_a, text_b=text_b,
                        labels=None if labels is None else np.asarray(labels, dtype=label_dtype),
                        ids=np.asarray(ids, dtype=np.int64), source=source)


def load_tfds_glue(task, split: str, data_dir: Optional[str] = None, download: bool = False) -> GlueExamples:
    """Loads one split of a GLUE task from tensorflow-datasets.

    Args:
        task: a task name or `GlueTask`.
        split: our split name ("train", "dev", MNLI "dev_matched", ...) or the TFDS one ("validation").
        data_dir: the TFDS data directory; None for TFDS's default (`~/tensorflow_datasets`).
        download: download and prepare the dataset there when it is not prepared yet (needs the network);
            False: it must be prepared already (e.g. `tfds build glue/mrpc --data_dir=...`).

    Raises:
        FileNotFoundError: the dataset is not prepared there (and could not be downloaded); the message says
            what to do.
    """
    import tensorflow_datasets as tfds

    task = get_glue_task(task)
    split = task.canonical_split(split)
    tfds_split = task.tfds_splits[split]
    source = f"{task.tfds_name}[{tfds_split}]"
    where = data_dir or "the default TFDS directory (~/tensorflow_datasets)"
    builder = tfds.builder(task.tfds_name, data_dir=data_dir)
    if download and not builder.is_prepared():
        from official_bert.data.downloads import unreachable_host

        host = unreachable_host(getattr(builder.builder_config, "data_url", None))
        if host:
            raise FileNotFoundError(
                f"TFDS dataset {task.tfds_name} is not prepared in {where} and {host} cannot be reached to download "
                f"it: pass --data_dir=<directory with the GLUE {task.name} TSV files>, or --tfds_data_dir=<a "
                f"directory where it is prepared>")
        logging.info("Downloading and preparing %s in %s", task.tfds_name, where)
        builder.download_and_prepare()
    try:
        dataset, info = tfds.load(task.tfds_name, split=tfds_split, data_dir=data_dir, download=False,
                                  shuffle_files=False, with_info=True)
    except (AssertionError, FileNotFoundError, tfds.core.registered.DatasetNotFoundError) as e:
        # TFDS raises AssertionError("could not find data in ...") for an unprepared dataset.
        raise FileNotFoundError(
            f"TFDS dataset {task.tfds_name} is not prepared in {where}. Pass --data_dir=<directory with the GLUE "
            f"{task.name} TSV files>, or prepare the dataset first (`tfds build {task.tfds_name} --data_dir=DIR`) "
            f"and pass DIR as --tfds_data_dir. ({type(e).__name__}: {e})") from None
    label_names = None if task.is_regression else info.features["label"].names
    return examples_from_tfds(task, split, tfds.as_numpy(dataset), label_names=label_names, source=source)
