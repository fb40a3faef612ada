"""Student initialisation from a teacher, and the Distiller's loss and training step, on tiny models."""

import keras
import numpy as np
import pytest

from official_bert import BertConfig
from official_bert import model_dir as model_dirs
from official_bert.compression.distiller import Distiller
from official_bert.compression.student import copy_teacher_weights, parse_layers, student_config, uniform_layer_map

pytestmark = pytest.mark.slow

INFO = {"label_names": ["a", "b", "c"]}


def _config(layers=4, hidden=32):
    return BertConfig(vocab_size=100, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=40, initializer_range=0.5)


def _inputs(batch=4, seq=10, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), "int32")
    mask[0, 6:] = 0
    return {"input_word_ids": rng.integers(1, 100, (batch, seq)).astype("int32"), "input_mask": mask,
            "input_type_ids": np.zeros((batch, seq), "int32")}


@pytest.fixture(scope="module")
def teacher():
    keras.utils.set_random_seed(1)
    return model_dirs.build_task_model(model_dirs.CLASSIFICATION, _config(), INFO)


def _student(teacher, layers, kind=model_dirs.CLASSIFICATION, info=INFO):
    student = model_dirs.build_task_model(kind, student_config(teacher.encoder.config, layers), info)
    copy_teacher_weights(student, teacher, layers)
    return student


def test_student_copies_the_named_layers(teacher):
    student = _student(teacher, [0, 2, 3])
    assert student.encoder.config.num_hidden_layers == 3

    def same(a, b):
        return all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a.weights, b.weights, strict=True))

    assert same(student.encoder.embeddings, teacher.encoder.embeddings)
    for i, j in enumerate([0, 2, 3]):
        assert same(student.encoder.transformer_layers[i], teacher.encoder.transformer_layers[j])
    assert not same(student.encoder.transformer_layers[1], teacher.encoder.transformer_layers[1])
    assert same(student.encoder.pooler, teacher.encoder.pooler) and same(student.head, teacher.head)


def test_a_student_of_every_layer_is_the_teacher(teacher):
    x = _inputs()
    student = _student(teacher, [0, 1, 2, 3])
    np.testing.assert_allclose(student(x), teacher(x), atol=1e-5)


def test_layer_arguments_are_checked():
    assert parse_layers("0, 2,4", 6) == [0, 2, 4]
    for text, message in (("0,6", "out of range"), ("1,1", "twice"), ("a", "comma-separated"), ("", "empty"),
                          ("4,2,0", r"in the teacher's order \(0,2,4\)")):
        with pytest.raises(ValueError, match=message):
            parse_layers(text, 6)
    assert uniform_layer_map(3, 6) == [1, 3, 5] and uniform_layer_map(2, 4) == [1, 3]


def test_distiller_loss_of_a_copy_is_its_task_loss(teacher):
    x, y = _inputs(), np.array([0, 1, 2, 0])
    distiller = Distiller(_student(teacher, [0, 1, 2, 3]), teacher, alpha=0.5, temperature=2.0)
    loss = float(distiller.compute_loss(x, y, distiller(x), training=False))
    task = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, teacher(x)))
    assert loss == pytest.approx(0.5 * task, rel=1e-4)
    assert float(distiller.trackers["distill_loss"].result()) == pytest.approx(0.0, abs=1e-5)


def test_distiller_trains_only_the_student_with_a_hidden_projection(teacher):
    keras.utils.set_random_seed(2)
    student = model_dirs.build_task_model(model_dirs.CLASSIFICATION, _config(layers=2, hidden=16), INFO)
    distiller = Distiller(student, teacher, alpha=0.0, hidden_weight=1.0, layer_map=uniform_layer_map(2, 4))
    assert distiller.projection is not None
    teacher_before = [v.numpy().copy() for v in teacher.weights]
    student_before = [v.numpy().copy() for v in student.trainable_weights]
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y = _inputs(8), np.array([0, 1, 2, 0, 1, 2, 0, 1])
    history = distiller.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert history.history["hidden_loss"][0] > 0 and history.history["task_loss"][0] > 0
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(teacher_before, teacher.weights))
    assert not np.array_equal(student_before[0], student.trainable_weights[0].numpy())
    np.testing.assert_allclose(distiller.predict(x, verbose=0), student(x), atol=1e-5)  # inference: the student


def test_attention_loss_is_zero_for_a_copy_and_trains_a_cut_student(teacher):
    """TinyBERT's attention loss: 0 between identical layers fed the same input; for a student of teacher layers
    0 and 2, its layer 0 equals the teacher's (loss 0 there) and its layer 1 (teacher layer 2's weights on layer 0's
    output) differs from teacher layer 2 (fed layer 1's output)."""
    x = _inputs()
    copy = Distiller(_student(teacher, [0, 1, 2, 3]), teacher, alpha=1.0, attention_weight=1.0,
                     layer_map=[0, 1, 2, 3])
    copy.compute_loss(x, np.array([0, 1, 2, 0]), copy._student_features(x, training=False), training=False)
    assert float(copy.trackers["attention_loss"].result()) == pytest.approx(0.0, abs=1e-8)

    keras.utils.set_random_seed(4)
    distiller = Distiller(_student(teacher, [0, 2]), teacher, alpha=0.0, attention_weight=1.0, layer_map=[0, 2])
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2))
    x8, y8 = _inputs(8), np.array([0, 1, 2, 0, 1, 2, 0, 1])
    history = distiller.fit(x8, y8, batch_size=8, epochs=3, verbose=0)
    assert history.history["attention_loss"][0] > 0 and history.history["hidden_loss"][0] == 0
    assert history.history["loss"][-1] < history.history["loss"][0]
    with pytest.raises(ValueError, match="as many heads on both sides"):
        keras.utils.set_random_seed(5)
        other = model_dirs.build_task_model(model_dirs.CLASSIFICATION, BertConfig(
            vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=40), INFO)
        Distiller(other, teacher, attention_weight=1.0, layer_map=[1, 3])


def test_token_and_span_students(teacher):
    for kind, info in ((model_dirs.TAGGING, {"label_names": ["O", "B-X", "I-X"]}), (model_dirs.SQUAD, {})):
        keras.utils.set_random_seed(3)
        big = model_dirs.build_task_model(kind, _config(), info)
        student = _student(big, [1, 3], kind, info)
        distiller = Distiller(student, big)
        x = _inputs()
        y = np.zeros((4, 10), "int32") if kind == model_dirs.TAGGING else {"start_logits": np.array([1, 2, 3, 4]),
                                                                            "end_logits": np.array([2, 3, 4, 5])}
        loss = float(distiller.compute_loss(x, y, distiller(x), training=False))
        assert np.isfinite(loss) and float(distiller.trackers["distill_loss"].result()) > 0


def test_an_albert_student_runs_the_teachers_shared_blocks_fewer_times():
    """ALBERT: the student gets the embeddings, the E -> H projection and every shared block; its layer k output
    is the teacher's (the same weights, run k times)."""
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=40, initializer_range=0.5, model_type="albert",
                        embedding_size=16, hidden_act="gelu_new", num_hidden_groups=2)
    keras.utils.set_random_seed(2)
    teacher = model_dirs.build_task_model(model_dirs.CLASSIFICATION, config, INFO)
    student = _student(teacher, [0, 1])
    x = _inputs()
    student_states = student.encoder(x)["encoder_outputs"]
    teacher_states = teacher.encoder(x)["encoder_outputs"]
    assert len(student.encoder.transformer_layers) == len(teacher.encoder.transformer_layers) == 2
    np.testing.assert_allclose(student_states[0], teacher_states[0], atol=1e-6)  # layer 1: group 0 in both
    with pytest.raises(ValueError, match="share 2 weight groups"):
        student_config(config, [0, 1, 2])


def test_a_tagging_student_trains_without_its_pooler_and_without_a_gradient_warning(recwarn):
    """The token classifier reads only `sequence_output`: its pooler is not trained (no "Gradients do not exist for
    variables ['pooler/kernel', 'pooler/bias']"), and is still saved with the student."""
    info = {"label_names": ["O", "B-PER", "I-PER"]}
    keras.utils.set_random_seed(3)
    teacher = model_dirs.build_task_model(model_dirs.TAGGING, _config(), info)
    for kwargs in ({}, {"hidden_weight": 1.0, "layer_map": [1, 3]}):  # the logits losses, and with the layer states
        student = _student(teacher, [1, 3], model_dirs.TAGGING, info)
        pooler = {id(v) for v in student.encoder.pooler.weights}
        pooler_before = [v.numpy().copy() for v in student.encoder.pooler.weights]
        distiller = Distiller(student, teacher, alpha=0.5, temperature=2.0, **kwargs)
        assert not pooler & {id(v) for v in distiller.trainable_weights}
        assert pooler <= {id(v) for v in distiller.non_trainable_weights}
        distiller.compile(optimizer=keras.optimizers.Adam(1e-2))
        x, y = _inputs(8), np.random.default_rng(0).integers(0, 3, (8, 10))
        distiller.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert not [str(w.message) for w in recwarn if "Gradients do not exist" in str(w.message)]
        assert all(np.array_equal(a, v.numpy()) for a, v in zip(pooler_before, student.encoder.pooler.weights))
        assert pooler <= {id(v) for v in student.weights}  # saved with the student's weights
