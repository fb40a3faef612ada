"""official_bert/run_checkpoint.py: the model and vocab a run starts from."""

import pytest


def test_a_vocab_file_of_another_kind_than_the_checkpoints_is_refused(tmp_path, shared_data):
    """A RoBERTa checkpoint given BERT's vocab.txt (and the other way round) trained with a tokenizer the model
    never saw, without a word, whenever the vocab was not larger than the model's table."""
    from official_bert.run_checkpoint import resolve_checkpoint_settings
    from official_bert.runner import RunConfig
    from official_bert.tasks.base import Task
    from tiny_families import roberta_directory

    checkpoint = roberta_directory(tmp_path / "roberta", 40)
    vocab = shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"
    config = RunConfig(model_dir=str(tmp_path / "out"), init_checkpoint=str(checkpoint), vocab_file=str(vocab))
    with pytest.raises(ValueError, match=r"bert-base-uncased-vocab.txt: .*a RoBERTa checkpoint's tokenizer is"):
        resolve_checkpoint_settings(config, Task())
