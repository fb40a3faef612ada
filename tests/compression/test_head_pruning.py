"""Attention-head pruning: head importance, `prune_heads` (a smaller model computing what the original does without
those heads), and `tasks.prune --prune_heads` end to end (a model_dir that loads and exports)."""

import json

import keras
import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked
from classifier_model_dirs import mrpc_task_info, write_classifier_model_dir

from official_bert import BertConfig
from official_bert import model_dir as model_dirs
from official_bert.compression.pruning import head_importance, heads_to_prune, prune_heads

pytestmark = pytest.mark.slow

INFO = mrpc_task_info()
HIDDEN, HEADS, LAYERS = 32, 4, 3


def _build(config):
    return model_dirs.build_task_model(model_dirs.CLASSIFICATION, config, INFO)


def _batches(count=2, batch=8, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        mask = np.ones((batch, seq), "int32")
        mask[0, 8:] = 0
        batches.append(({"input_word_ids": rng.integers(1000, 2000, (batch, seq)).astype("int32"),
                         "input_mask": mask, "input_type_ids": np.zeros((batch, seq), "int32")},
                        rng.integers(0, 2, batch)))
    return batches


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(4)
    config = BertConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.5)
    model = _build(config)
    rng = np.random.default_rng(3)
    for variable in model.weights:  # biases away from 0, so a misplaced bias slice shows
        variable.assign(variable.numpy() + 0.05 * rng.standard_normal(variable.shape).astype("float32"))
    return model


def test_keeping_every_head_is_the_same_model(model):
    pruned = prune_heads(model, {}, _build)
    assert pruned.encoder.config == model.encoder.config and pruned.encoder.config.to_dict() == \
        model.encoder.config.to_dict()
    x, _ = _batches(1)[0]
    np.testing.assert_array_equal(np.asarray(pruned(x)), np.asarray(model(x)))


def test_pruned_model_equals_the_original_with_those_heads_output_rows_zeroed(model):
    remove = {0: [1, 3], 2: [0]}
    pruned = prune_heads(model, remove, _build)
    assert pruned.encoder.config.pruned_heads == remove
    assert [layer.attention.num_kept_heads for layer in pruned.encoder.transformer_layers] == [2, 4, 3]
    zeroed = _build(model.encoder.config)
    zeroed.set_weights(model.get_weights())
    for layer, heads in remove.items():
        kernel = zeroed.encoder.transformer_layers[layer].attention.output_dense.kernel  # (heads, head_size, hidden)
        values = kernel.numpy()
        values[heads] = 0.0
        kernel.assign(values)
    for x, _ in _batches():
        np.testing.assert_allclose(np.asarray(pruned(x)), np.asarray(zeroed(x)), atol=1e-5)
        assert not np.allclose(np.asarray(pruned(x)), np.asarray(model(x)), atol=1e-3)  # the heads mattered

    # pruning again names original indices, as transformers does; already removed heads are ignored
    again = prune_heads(pruned, {0: [1, 0], 1: [2]}, _build)
    assert again.encoder.config.pruned_heads == {0: [0, 1, 3], 1: [2], 2: [0]}
    np.testing.assert_array_equal(again.encoder.transformer_layers[0].attention.query.kernel.numpy(),
                                  model.encoder.transformer_layers[0].attention.query.kernel.numpy()[:, [2]])


def test_parameter_count_drops_by_the_removed_heads(model):
    pruned = prune_heads(model, {0: [0, 1], 1: [3]}, _build)
    head_size = HIDDEN // HEADS
    per_head = 3 * (HIDDEN * head_size + head_size) + head_size * HIDDEN  # q, k, v kernels + biases; output rows
    assert model.count_params() - pruned.count_params() == 3 * per_head
    assert tuple(pruned.encoder.transformer_layers[0].attention.output_dense.kernel.shape) == (2, head_size, HIDDEN)


def test_pruned_layers_round_trip_through_their_configs(model):
    pruned = prune_heads(model, {1: [0, 2]}, _build)
    attention = pruned.encoder.transformer_layers[1].attention
    clone = type(attention).from_config(attention.get_config())
    assert clone.num_kept_heads == 2 and clone.head_size == HIDDEN // HEADS
    block = pruned.encoder.transformer_layers[1]
    assert type(block).from_config(block.get_config()).num_kept_heads == 2
    encoder = type(pruned.encoder).from_config(pruned.encoder.get_config())
    assert encoder.config.pruned_heads == {1: [0, 2]}
    encoder.set_weights(pruned.encoder.get_weights())
    x, _ = _batches(1)[0]
    np.testing.assert_array_equal(np.asarray(encoder(x)["sequence_output"]),
                                  np.asarray(pruned.encoder(x)["sequence_output"]))


def test_fused_attention_of_a_pruned_model_equals_the_einsum_path(model):
    from official_bert.models import BertClassifier, BertEncoder

    pruned = prune_heads(model, {0: [1, 3], 2: [0]}, _build)
    x, _ = _batches(1)[0]
    expected = np.asarray(pruned(x))
    fused = BertClassifier(BertEncoder(pruned.encoder.config, fused_attention=True), pruned.num_classes)
    fused.set_weights(pruned.get_weights())
    np.testing.assert_allclose(np.asarray(fused(x)), expected, atol=1e-5)


def test_head_importance_is_the_gate_gradient(model):
    """Michel et al.'s |dL/dg_h|: checked against a finite difference of the loss in a gate on one head (the
    head's output-projection rows scaled by 1 +- eps)."""
    from official_bert.compression.losses import task_loss

    batches = _batches(1)
    scores = head_importance(model, batches)
    assert len(scores) == LAYERS and all(len(row) == HEADS for row in scores)
    assert all(s > 0 and np.isfinite(s) for row in scores for s in row)
    x, y = batches[0]
    kernel = model.encoder.transformer_layers[1].attention.output_dense.kernel
    original = kernel.numpy()

    def loss_with_gate(gate):
        values = original.copy()
        values[2] *= gate
        kernel.assign(values)
        return float(task_loss(model.default_loss(), model.default_loss_weights(), y, model(x, training=False)))

    eps = 1e-2
    try:
        numeric = (loss_with_gate(1 + eps) - loss_with_gate(1 - eps)) / (2 * eps)
    finally:
        kernel.assign(original)
    assert scores[1][2] == pytest.approx(abs(numeric), rel=2e-2, abs=1e-6)

    # a pruned model rates only the heads it has
    pruned = prune_heads(model, {1: [0, 2]}, _build)
    pruned_scores = head_importance(pruned, batches)
    assert pruned_scores[1][0] is None and pruned_scores[1][2] is None and pruned_scores[1][1] is not None


def test_heads_to_prune_removes_the_least_important_and_keeps_one_per_layer():
    scores = [[0.1, 0.2, 0.3, 0.4], [5.0, 6.0, 7.0, 8.0], [0.01, 0.02, None, 9.0]]
    assert heads_to_prune(scores, 0.0) == {}
    # 11 rated heads (layer 2's head 2 is already gone), round(5.5) = 6 go, the least important first; layer 0's
    # last head (0.4) stays although it rates below 5.0
    assert heads_to_prune(scores, 0.5) == {0: [0, 1, 2], 1: [0], 2: [0, 1]}
    assert heads_to_prune(scores, 0.99) == {0: [0, 1, 2], 1: [0, 1, 2], 2: [0, 1]}  # one head left per layer
    with pytest.raises(ValueError, match="--prune_heads"):
        heads_to_prune(scores, 1.0)


def test_bad_head_pruning_is_refused(model):
    with pytest.raises(ValueError, match="every head of layer 0"):
        prune_heads(model, {0: [0, 1, 2, 3]}, _build)
    with pytest.raises(ValueError, match="names layer 5"):
        prune_heads(model, {5: [0]}, _build)
    with pytest.raises(ValueError, match="head indices in 0..3"):
        prune_heads(model, {0: [4]}, _build)


@pytest.fixture(scope="module")
def teacher_dir(shared_data, tmp_path_factory):
    """A random 3-layer MRPC classifier written as `tasks.run_classifier` leaves it."""
    keras.utils.set_random_seed(5)
    path = tmp_path_factory.mktemp("teacher")
    config = BertConfig(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.5)
    vocab = shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"
    return write_classifier_model_dir(path, _build(config), INFO, vocab)


def test_prune_heads_run_writes_a_smaller_model_dir_that_loads_and_exports(shared_data, teacher_dir, tmp_path):
    import tensorflow as tf

    from export.saved_model import export
    from official_bert.model_dir import load_model_dir
    from official_bert.text.preprocessing import text_preprocessor

    out = tmp_path / "pruned"
    args = [f"--teacher={teacher_dir}", "--prune_heads=0.5", f"--data_dir={shared_data / 'glue' / 'MRPC'}",
            f"--model_dir={out}", "--train_batch_size=8", "--eval_batch_size=128", "--num_train_steps=2",
            "--importance_examples=16"]
    (result,) = run_forked([("tasks.prune", args)], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    importance = json.loads((out / "importance.json").read_text())
    assert len(importance["head_importance"]) == LAYERS and importance["head_importance_method"]
    pruned_heads = {int(k): v for k, v in importance["pruned_heads"].items()}
    assert sum(len(v) for v in pruned_heads.values()) == LAYERS * HEADS // 2
    assert all(len(v) < HEADS for v in pruned_heads.values())
    assert json.loads((out / model_dirs.CONFIG_FILE).read_text())["pruned_heads"] == importance["pruned_heads"]
    run = json.loads((out / "run.json").read_text())
    assert run["task"]["distillation"]["pruned_heads"] == importance["pruned_heads"]

    loaded = load_model_dir(str(out))
    teacher = load_model_dir(str(teacher_dir))
    assert loaded.config.pruned_heads == pruned_heads
    assert loaded.model.count_params() < teacher.model.count_params()
    for i, layer in enumerate(loaded.model.encoder.transformer_layers):
        assert layer.attention.query.kernel.shape[1] == HEADS - len(pruned_heads.get(i, []))

    version = export(str(out), str(tmp_path / "export"))  # through export.saved_model.build_module
    served = tf.saved_model.load(version)
    outputs = served.signatures["serving_default"](text=tf.constant(["a cat"]), text_b=tf.constant(["a dog"]))
    packer = text_preprocessor(loaded.vocab_file, loaded.lower_case, loaded.max_seq_length)
    inputs = packer.pack([tf.constant(["a cat"]), tf.constant(["a dog"])])[0]
    np.testing.assert_allclose(outputs["logits"].numpy(), np.asarray(loaded.model(inputs)), atol=1e-4)


def test_cutting_layers_of_a_head_pruned_model_keeps_each_layers_heads(model):
    from official_bert.compression.student import copy_teacher_weights, student_config

    pruned = prune_heads(model, {0: [1], 2: [0, 3]}, _build)
    config = student_config(pruned.encoder.config, [0, 2])
    assert config.num_hidden_layers == 2 and config.pruned_heads == {0: [1], 1: [0, 3]}
    student = _build(config)
    copy_teacher_weights(student, pruned, [0, 2])
    for i, j in enumerate([0, 2]):
        student_block, teacher_block = student.encoder.transformer_layers[i], pruned.encoder.transformer_layers[j]
        for ours, theirs in zip(student_block.weights, teacher_block.weights):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # a student may not keep a head its teacher layer lacks
    with pytest.raises(ValueError, match="keeps heads"):
        copy_teacher_weights(_build(student_config(model.encoder.config, [0, 2])), pruned, [0, 2])
