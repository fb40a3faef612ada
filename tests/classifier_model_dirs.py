"""A classification model_dir written as `tasks.run_classifier` leaves it, for the compression tests' teachers and
pruned students (no CLI run: that costs a minute of start-up and training on 2 cores)."""


def mrpc_task_info():
    """task.json's fields of an MRPC classifier (two labels, "0" and "1"), a new dict each call."""
    return {"task": "MRPC", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2}


def write_classifier_model_dir(path, model, info, vocab_file, seq_length=32):
    """Writes `task.json`, `bert_config.json`, `vocab.txt`, `model.weights.h5` and `encoder/` (the runner's
    `save_trained`) for a `BertClassifier` into `path`; returns `path`.

    Args:
        path: a `pathlib.Path`, created if missing.
        model: the classifier.
        info: its task.json fields (`task`, `label_names`, ...), besides `max_seq_length` and `do_lower_case`.
        vocab_file: a WordPiece `vocab.txt` (uncased).
        seq_length: the run's `max_seq_length`.
    """
    from official_bert import model_dir as model_dirs
    from official_bert.run_model_dir import save_trained

    model_dirs.write_task_info(str(path), model_dirs.CLASSIFICATION,
                               {**info, "max_seq_length": seq_length, "do_lower_case": True})
    model_dirs.write_json(str(path / model_dirs.CONFIG_FILE), model.encoder.config.to_dict())
    (path / model_dirs.VOCAB_FILE).write_text(vocab_file.read_text(encoding="utf-8"), encoding="utf-8")
    save_trained(model, str(path), str(vocab_file), True)
    return path
