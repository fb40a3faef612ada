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


def test_a_hub_id_starts_the_run_from_its_snapshot_in_huggingface_hubs_cache(hub_cache, tmp_path):
    """`--init_checkpoint=org/name` reads a checkpoint as `from_pretrained` does: a hub id (here from the cache,
    offline) gives the snapshot's weights, config and vocab; an id found nowhere is named in one line."""
    from official_bert.run_checkpoint import resolve_checkpoint_settings
    from official_bert.runner import RunConfig
    from official_bert.tasks.base import Task
    from official_bert.text.preprocessing import read_vocab_file

    config = RunConfig(model_dir=str(tmp_path / "out"), init_checkpoint="tiny-org/tiny-bert", max_seq_length=32)
    settings = resolve_checkpoint_settings(config, Task())
    assert settings.init_checkpoint == str(hub_cache)
    assert settings.tokens == read_vocab_file(str(hub_cache / "vocab.txt"))
    assert settings.bert_config.num_hidden_layers == 1 and settings.bert_config.hidden_size == 32
    absent = RunConfig(model_dir=str(tmp_path / "out"), init_checkpoint="tiny-org/absent")
    with pytest.raises(FileNotFoundError, match="^tiny-org/absent: no such directory, and not fetched as a Hugging "
                                                "Face hub id"):
        resolve_checkpoint_settings(absent, Task())
