"""trim_inputs and trim_batch_padding: batches cut to their longest sequence (rounded up), with the same loss
as uncut ones."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert import BertEncoder
from official_bert.data.padding import trim_batch_padding, trim_inputs
from official_bert.labels import IGNORE_LABEL
from official_bert.models.classifier import BertClassifier
from official_bert.models.token_classifier import BertTokenClassifier


def _batch(lengths, seq_length, seed=0):
    """Encoder inputs (len(lengths), seq_length) with the given real lengths, and per-piece labels (-100 on pads)."""
    rng = np.random.default_rng(seed)
    mask = (np.arange(seq_length)[None, :] < np.asarray(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(1, 100, mask.shape).astype(np.int32) * mask
    types = (rng.integers(0, 2, mask.shape) * mask).astype(np.int32)
    labels = np.where(mask == 1, rng.integers(0, 3, mask.shape), IGNORE_LABEL).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}, labels


def _trimmed(inputs, labels, **kwargs):
    dataset = tf.data.Dataset.from_tensors((inputs, labels))
    return next(iter(trim_batch_padding(dataset, **kwargs)))


@pytest.mark.parametrize("lengths, expected", [([5, 37, 12], 64), ([32, 2], 32), ([97, 3], 128), ([128], 128)])
def test_batch_is_cut_to_its_longest_sequence_rounded_up(lengths, expected):
    inputs, labels = _batch(lengths, 128)
    trimmed, trimmed_labels = _trimmed(inputs, labels, sequence_labels=True)
    for name, values in trimmed.items():
        assert values.shape == (len(lengths), expected), name
        np.testing.assert_array_equal(values.numpy(), inputs[name][:, :expected])
    np.testing.assert_array_equal(trimmed_labels.numpy(), labels[:, :expected])
    assert trimmed["input_mask"].numpy().sum() == sum(lengths)  # no real piece lost


@pytest.mark.parametrize("lengths, multiple, expected", [([5, 37, 12], 1, 37), ([5, 37], 8, 40), ([0, 0], 1, 1),
                                                        ([], 1, 1)])
def test_one_batch_is_cut_exactly_or_to_a_multiple(lengths, multiple, expected):
    inputs, _ = _batch(lengths, 48)
    trimmed, length = trim_inputs({k: tf.constant(v) for k, v in inputs.items()}, multiple)
    assert int(length) == expected
    for name, values in trimmed.items():
        np.testing.assert_array_equal(values.numpy(), inputs[name][:, :expected])


def test_sentence_labels_and_label_free_batches():
    inputs, _ = _batch([10, 20], 128)
    trimmed, sentence_labels = _trimmed(inputs, np.array([0, 1], np.int32))
    assert trimmed["input_word_ids"].shape == (2, 32)
    np.testing.assert_array_equal(sentence_labels.numpy(), [0, 1])
    alone = next(iter(trim_batch_padding(tf.data.Dataset.from_tensors(inputs), multiple=8)))
    assert alone["input_mask"].shape == (2, 24)
    with pytest.raises(ValueError, match="multiple must be a positive number of pieces, got 0"):
        trim_batch_padding(tf.data.Dataset.from_tensors(inputs), multiple=0)


def test_tagging_and_classification_losses_do_not_change(tiny_config):
    keras.utils.set_random_seed(0)
    inputs, labels = _batch([6, 30, 17, 9], 40, seed=1)
    trimmed, trimmed_labels = _trimmed(inputs, labels, multiple=8, sequence_labels=True)
    assert trimmed["input_mask"].shape == (4, 32)

    tagger = BertTokenClassifier(BertEncoder(tiny_config), 3)
    tagger.compile()
    full_loss = tagger.compute_loss(y=labels, y_pred=tagger(inputs))
    cut_loss = tagger.compute_loss(y=trimmed_labels, y_pred=tagger(trimmed))
    assert float(cut_loss) == pytest.approx(float(full_loss), rel=1e-6)

    classifier = BertClassifier(BertEncoder(tiny_config), 2)
    np.testing.assert_allclose(classifier(trimmed).numpy(), classifier(inputs).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("jit_compile, multiple", [(False, 1), (True, 32)])
def test_task_training_batches_are_cut_exactly_without_xla(shared_data, tmp_path, jit_compile, multiple):
    """Without XLA a batch is cut to its longest pair (Keras traces the train step once for every length: the
    stream's length dimension is unknown); under XLA, which compiles per shape, to a multiple of 32 pieces."""
    from official_bert.run_config import RunConfig, RunContext
    from official_bert.tasks.classification import ClassificationTask

    task = ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC"))
    config = RunConfig(model_dir=str(tmp_path), jit_compile=jit_compile, max_seq_length=128)
    task.read_data(config, None)
    context = RunContext(config=config, bert_config=None, tokenizer=None, strategy=None, out_dir=str(tmp_path),
                         results_dir=str(tmp_path), is_chief=True, lower_case=True,
                         vocab_file=str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    _, make_dataset = task.train_dataset(context)
    dataset = make_dataset(16)
    assert dataset.element_spec[0]["input_word_ids"].shape[1] is None
    for inputs, _ in dataset.take(6):
        longest = int(inputs["input_mask"].numpy().sum(axis=1).max())
        assert inputs["input_mask"].shape[1] == min(128, -(-longest // multiple) * multiple)
