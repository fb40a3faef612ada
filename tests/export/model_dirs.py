"""Tiny model_dirs in the layout `tasks.run_classifier` / `run_ner` / `run_squad` / `run_multiple_choice` /
`run_pretraining` write.

The model_dirs are written with the same library calls as `tasks/common.py` (`task.json` with the task's
fields, `bert_config.json`, `vocab.txt`, `model.weights.h5`) instead of running the task CLIs (a CLI
run costs a minute of TF start-up and training on 2 cores; the CLIs' own tests cover that layout). The
weights are random with a large initializer range (0.5) so the tiny models give varied labels and entities
(at BERT's 0.02, an untrained encoder gives every text nearly the same [CLS] vector and label).
"""

import shutil

CONLL_LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def tiny_bert_config(max_position_embeddings=64):
    """A 1-layer, hidden-32 BERT (one layer: an export traces, saves and loads it in half the time of two)."""
    from official_bert import BertConfig

    return BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                      max_position_embeddings=max_position_embeddings, initializer_range=0.5)


def write_model_dir(path, model, task_info, vocab_file, seq_length):
    """A model_dir as `official_bert.runner` leaves it (the kind follows from task_info's "task")."""
    from official_bert import model_dir as model_dirs

    kind = {"ner": model_dirs.TAGGING, "squad": model_dirs.SQUAD, "pretraining": model_dirs.PRETRAINING,
            "multiple_choice": model_dirs.MULTIPLE_CHOICE}.get(task_info["task"], model_dirs.CLASSIFICATION)
    path.mkdir(parents=True)
    model_dirs.write_task_info(str(path), kind, {**task_info, "max_seq_length": seq_length, "do_lower_case": True})
    model_dirs.write_json(str(path / "bert_config.json"), model.encoder.config.to_dict())
    shutil.copy(vocab_file, path / "vocab.txt")
    model.save_weights(str(path / "model.weights.h5"))
    return path


def squad_task_info(version_2_with_negative, max_query_length, max_answer_length, null_score_diff_threshold,
                    doc_stride=16):
    """The task.json fields of `tasks.run_squad` (besides `max_seq_length` / `do_lower_case`)."""
    return {"task": "squad", "version_2_with_negative": version_2_with_negative, "doc_stride": doc_stride,
            "max_query_length": max_query_length, "max_answer_length": max_answer_length,
            "null_score_diff_threshold": null_score_diff_threshold}


def tiny_span_labeler(seed, max_position_embeddings):
    """A random `BertSpanLabeler` (see the module notes on the initializer range)."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.span_labeler import BertSpanLabeler

    keras.utils.set_random_seed(seed)
    return BertSpanLabeler(BertEncoder(tiny_bert_config(max_position_embeddings)))


def pretraining_task_info(config, max_predictions_per_seq=20):
    """The task.json fields of `tasks.run_pretraining` (besides `max_seq_length` / `do_lower_case`)."""
    return {"task": "pretraining", "max_predictions_per_seq": max_predictions_per_seq, "config": config.to_dict()}


def tiny_pretrainer(seed):
    """A random `BertPretrainer` (see the module notes on the initializer range)."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.pretrainer import BertPretrainer

    keras.utils.set_random_seed(seed)
    return BertPretrainer(BertEncoder(tiny_bert_config()))


def multiple_choice_dir(path, vocab_file, seq_length=48, seed=11):
    """A `tasks.run_multiple_choice` model_dir holding a random `BertMultipleChoice` (see the module notes)."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.multiple_choice import BertMultipleChoice

    keras.utils.set_random_seed(seed)
    model = BertMultipleChoice(BertEncoder(tiny_bert_config()))
    return write_model_dir(path, model, {"task": "multiple_choice"}, vocab_file, seq_length)


def regression_dir(path, vocab_file):
    """An STS-B (regression) model_dir, sequence length 32."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.classifier import BertClassifier

    keras.utils.set_random_seed(3)
    model = BertClassifier(BertEncoder(tiny_bert_config()), 1)
    info = {"task": "STS-B", "label_names": [], "is_regression": True, "num_classes": 1}
    return write_model_dir(path, model, info, vocab_file, 32)


def squad_dir(path, vocab_file, version_2):
    """A SQuAD v1.1 or v2.0 model_dir, 64 pieces a window."""
    info = squad_task_info(version_2, max_query_length=16, max_answer_length=10, null_score_diff_threshold=0.0)
    return write_model_dir(path, tiny_span_labeler(8 + version_2, 64), info, vocab_file, 64)


def masked_lm_dir(path, vocab_file):
    """A `tasks.run_pretraining` model_dir holding a random `BertPretrainer`, sequence length 40."""
    model = tiny_pretrainer(seed=10)
    return write_model_dir(path, model, pretraining_task_info(model.encoder.config), vocab_file, 40)
