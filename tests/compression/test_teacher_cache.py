"""The teacher cache (`--cache_teacher`): example fingerprints, cached logits equal to the teacher's on later
epochs of a shuffled, padding-trimmed stream, and the same distillation steps as a teacher pass per step."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert import BertConfig
from official_bert import model_dir as model_dirs
from official_bert.compression.distiller import Distiller
from official_bert.compression.student import copy_teacher_weights, student_config
from official_bert.compression.teacher_cache import TEACHER_LOGITS, build_teacher_cache, example_keys
from official_bert.data.padding import trim_batch_padding

pytestmark = pytest.mark.slow

SEQ, EXAMPLES, BATCH = 64, 20, 4
KINDS = {model_dirs.CLASSIFICATION: {"label_names": ["a", "b", "c"]},
         model_dirs.TAGGING: {"label_names": ["O", "B-X", "I-X"]}, model_dirs.SQUAD: {}}


def _config(layers=3):
    return BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=SEQ, initializer_range=0.5,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _examples(seed=0):
    """`EXAMPLES` packed examples of 3 to 40 real pieces (two segments), padded to `SEQ`, and their labels."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 41, EXAMPLES)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype("int32")  # (examples, SEQ)
    inputs = {"input_word_ids": rng.integers(1, 100, (EXAMPLES, SEQ)).astype("int32") * mask, "input_mask": mask,
              "input_type_ids": (np.arange(SEQ)[None, :] >= lengths[:, None] // 2).astype("int32") * mask}
    labels = {model_dirs.CLASSIFICATION: rng.integers(0, 3, EXAMPLES).astype("int32"),
              model_dirs.TAGGING: rng.integers(0, 3, (EXAMPLES, SEQ)).astype("int32"),
              model_dirs.SQUAD: {"start_logits": rng.integers(0, 3, EXAMPLES),
                                 "end_logits": rng.integers(3, 6, EXAMPLES)}}
    return inputs, labels


def _stream(kind, batch_size=BATCH):
    """Shuffled before it repeats and, except SQuAD's, cut to each batch's longest example, as the tasks' streams."""
    inputs, labels = _examples()
    dataset = tf.data.Dataset.from_tensor_slices((inputs, labels[kind])).shuffle(EXAMPLES, seed=3).repeat()
    dataset = dataset.batch(batch_size, drop_remainder=True)
    if kind == model_dirs.SQUAD:
        return dataset
    return trim_batch_padding(dataset, multiple=8, sequence_labels=kind == model_dirs.TAGGING)


def _teacher(kind):
    keras.utils.set_random_seed(1)
    return model_dirs.build_task_model(kind, _config(), KINDS[kind])


def test_keys_ignore_batch_padding_and_tell_examples_apart():
    inputs, _ = _examples()
    full = example_keys(inputs, SEQ).numpy()
    cut = example_keys({name: values[:, :48] for name, values in inputs.items()}, SEQ).numpy()
    np.testing.assert_array_equal(full, cut)
    assert len(set(full.tolist())) == EXAMPLES
    other_segments = dict(inputs, input_type_ids=np.zeros_like(inputs["input_type_ids"]))
    assert not np.any(example_keys(other_segments, SEQ).numpy() == full)
    other_padding = dict(inputs, input_word_ids=inputs["input_word_ids"] + (1 - inputs["input_mask"]))  # pad id 1
    np.testing.assert_array_equal(example_keys(other_padding, SEQ).numpy(), full)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_cached_logits_are_the_teachers_on_later_epochs(kind):
    teacher = _teacher(kind)
    cache = build_teacher_cache(teacher, _stream(kind, batch_size=8), EXAMPLES, 8, SEQ,
                                per_piece=kind != model_dirs.CLASSIFICATION)
    assert cache.num_examples == EXAMPLES
    for inputs, _ in cache.attach(_stream(kind)).take(3 * EXAMPLES // BATCH):  # three epochs, other batches
        cached = inputs.pop(TEACHER_LOGITS)
        expected = teacher(inputs, training=False)
        if kind == model_dirs.TAGGING:  # only the real pieces: the loss masks the padding
            real = inputs["input_mask"].numpy().astype(bool)
            np.testing.assert_allclose(cached.numpy()[real], expected.numpy()[real], atol=2e-5)
        else:
            keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5), cached, expected)


def test_distillation_steps_with_cached_logits_are_those_with_a_teacher_pass():
    kind = model_dirs.CLASSIFICATION
    teacher = _teacher(kind)

    def train(stream):
        student = model_dirs.build_task_model(kind, student_config(teacher.encoder.config, [0, 2]), KINDS[kind])
        copy_teacher_weights(student, teacher, [0, 2])
        initial = [w.numpy() for w in student.weights]
        distiller = Distiller(student, teacher, alpha=0.5, temperature=2.0)
        # Plain SGD: a weight's step is linear in its gradient, so the cached and computed teacher logits' float32
        # rounding (other batch shapes) stays at rounding size. Adam divides by sqrt(v) + 1e-7, and the weights with
        # gradients near 1e-7 then take steps of either sign (1.3e-4 apart after 15 steps with AVX2's kernels).
        distiller.compile(optimizer=keras.optimizers.SGD(0.1))
        history = distiller.fit(stream, steps_per_epoch=EXAMPLES // BATCH, epochs=3, shuffle=False, verbose=0).history
        return history, initial, [w.numpy() for w in student.weights]

    cache = build_teacher_cache(teacher, _stream(kind), EXAMPLES, BATCH, SEQ, per_piece=False)
    cached_history, initial, cached_weights = train(cache.attach(_stream(kind)))
    history, _, weights = train(_stream(kind))
    assert cached_history["distill_loss"][0] > 0
    for name in ("loss", "task_loss", "distill_loss"):
        np.testing.assert_allclose(cached_history[name], history[name], rtol=1e-5)
    assert max(np.abs(a - b).max() for a, b in zip(weights, initial, strict=True)) > 1e-2  # the steps moved them
    for a, b in zip(cached_weights, weights, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_an_example_missing_from_the_cache_is_an_error():
    kind = model_dirs.CLASSIFICATION
    cache = build_teacher_cache(_teacher(kind), _stream(kind), BATCH, BATCH, SEQ, per_piece=False)  # one batch
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the teacher cache"):
        for _ in cache.attach(_stream(kind)).take(EXAMPLES // BATCH):
            pass
