"""Tiny model_dirs in the layout `tasks.run_classifier` / `tasks.run_ner` write.

The model_dirs are written with the same library calls as `tasks/common.py` (`task.json` with the task's
fields, `bert_config.json`, `vocab.txt`, `model.weights.h5`) instead of running the task CLIs (a CLI
run costs a minute of TF start-up and training on 2 cores; the CLIs' own tests cover that layout). The
weights are random with a large initializer range (0.5) so the tiny models give varied labels and entities
(at BERT's 0.02, an untrained encoder gives every text nearly the same [CLS] vector and label).
"""

import shutil

CONLL_LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def tiny_bert_config():
    from official_bert import BertConfig

    return BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                      max_position_embeddings=64, initializer_range=0.5)


def write_model_dir(path, model, task_info, vocab_file, seq_length):
    """A model_dir as `tasks.common.prepare_model_dir` + `fit_and_save` leave it."""
    from official_bert.training import write_json

    path.mkdir(parents=True)
    write_json(str(path / "task.json"), {**task_info, "max_seq_length": seq_length, "do_lower_case": True})
    write_json(str(path / "bert_config.json"), model.encoder.config.to_dict())
    shutil.copy(vocab_file, path / "vocab.txt")
    model.save_weights(str(path / "model.weights.h5"))
    return path
