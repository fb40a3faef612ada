"""Optimizers: warmup/decay schedule, weight-decay exclusions, and AdamW steps equal to PyTorch's."""

import dataclasses

import keras
import numpy as np
import pytest

from official_bert import BertEncoder, optimization
from official_bert.models.classifier import BertClassifier
from official_bert.optimization import WarmupLinearDecay, create_optimizer


def test_warmup_then_linear_decay():
    schedule = WarmupLinearDecay(1e-3, total_steps=100, warmup_steps=10)
    rates = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 120)]
    np.testing.assert_allclose(rates, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)


def test_no_weight_decay_on_layer_norm_and_bias(tiny_config):
    model = BertClassifier(BertEncoder(tiny_config), 2)
    optimizer = create_optimizer(1e-3, 10, 1)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    assert "transformer_layer_0/attention/query/kernel" in decayed
    assert "embeddings/word_embeddings" in decayed
    assert not any(p.endswith(("/bias", "/gamma", "/beta")) for p in decayed)


def test_unknown_optimizer_is_rejected():
    with pytest.raises(ValueError, match="optimizer must be 'adamw' or 'lamb', got 'sgd'"):
        create_optimizer(1e-3, 10, 1, optimizer="sgd")


def _embedding_model(vocab, dim, seq):
    """ids (batch, seq) -> embedding (batch, seq, dim) -> dense (batch, seq, 1) -> mean over seq (batch, 1)."""
    ids = keras.Input(shape=(seq,), dtype="int32")
    pieces = keras.layers.Embedding(vocab, dim, name="embeddings")(ids)
    scores = keras.layers.Dense(1, name="dense")(pieces)
    return keras.Model(ids, keras.ops.mean(scores, axis=1))


# FUSED_UPDATE_MIN_SIZE for each way TensorFlow updates a variable: every variable one XLA kernel, or op by op.
UPDATES = {"xla_kernel": 0, "op_by_op": 10**9}


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("loss_scale", [1.0, 1e-7], ids=["clipped", "tiny-gradients"])
def test_adamw_steps_equal_torch_adamw_with_repeated_embedding_ids(loss_scale, update, monkeypatch):
    """Embedding rows looked up many times per batch (their gradient arrives as IndexedSlices with repeated ids)
    and gradients far below epsilon (where Keras' epsilon placement would differ 32x at the first step) update
    exactly as torch.optim.AdamW with a dense nn.Embedding, with warmup/decay, weight decay and clipping; on
    TensorFlow both ways a variable may be updated (by its size) do so."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    monkeypatch.setattr(optimization, "FUSED_UPDATE_MIN_SIZE", UPDATES[update])
    vocab, dim, seq, steps, learning_rate = 6, 4, 5, 5, 1e-2
    keras.utils.set_random_seed(0)
    model = _embedding_model(vocab, dim, seq)
    table, kernel, bias = (w.numpy() for w in model.weights)
    model.compile(optimizer=create_optimizer(learning_rate, steps, 1, epsilon=1e-8, clip_norm=0.5),
                  loss=lambda y, p: loss_scale * keras.ops.mean(keras.ops.square(p - y)), jit_compile=False)

    embedding, dense = torch.nn.Embedding(vocab, dim), torch.nn.Linear(dim, 1)
    with torch.no_grad():
        embedding.weight.copy_(torch.tensor(table))
        dense.weight.copy_(torch.tensor(kernel.T))
        dense.bias.copy_(torch.tensor(bias))
    optimizer = torch.optim.AdamW([{"params": [embedding.weight, dense.weight], "weight_decay": 0.01},
                                   {"params": [dense.bias], "weight_decay": 0.0}], lr=learning_rate, eps=1e-8)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, 1, steps)

    rng = np.random.default_rng(1)
    for step in range(steps):
        ids = rng.integers(0, 3, (8, seq)).astype("int32")  # rows 0-2 repeated ~13 times each; rows 3-5 never
        targets = rng.normal(size=(8, 1)).astype("float32")
        model.train_on_batch(ids, targets)
        predictions = dense(embedding(torch.tensor(ids, dtype=torch.long))).mean(dim=1)
        loss = loss_scale * ((predictions - torch.tensor(targets)) ** 2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([embedding.weight, dense.weight, dense.bias], 0.5)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        ours_table, ours_kernel, ours_bias = (w.numpy() for w in model.weights)
        np.testing.assert_allclose(ours_table, embedding.weight.detach().numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=f"embedding table after step {step}")
        np.testing.assert_allclose(ours_kernel, dense.weight.detach().numpy().T, rtol=1e-5, atol=1e-7,
                                   err_msg=f"dense kernel after step {step}")
        np.testing.assert_allclose(ours_bias, dense.bias.detach().numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=f"dense bias after step {step}")
    # Rows never looked up still moved: weight decay, and from step 2 on nothing else (their moments are zero).
    assert not np.allclose(ours_table[3:], table[3:])


def _train_embedding_model(strategy, steps=3):
    """The weights of `_embedding_model` after `steps` AdamW steps (weight decay, clipping) under `strategy`."""
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = _embedding_model(6, 4, 5)
        model.compile(optimizer=create_optimizer(1e-2, steps, 1, clip_norm=0.5),
                      loss=lambda y, p: keras.ops.mean(keras.ops.square(p - y)), jit_compile=False)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        model.train_on_batch(rng.integers(0, 3, (8, 5)).astype("int32"), rng.normal(size=(8, 1)).astype("float32"))
    return model, [w.numpy() for w in model.weights]


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's fused update")
def test_adamw_updates_a_large_variable_in_one_xla_kernel_and_a_distributed_one_op_by_op_the_same(monkeypatch):
    import tensorflow as tf

    # The embedding table (6 x 4) counts as large, the dense kernel (4 x 1) and bias (1,) as small.
    monkeypatch.setattr(optimization, "FUSED_UPDATE_MIN_SIZE", 24)
    model, fused = _train_embedding_model(tf.distribute.get_strategy())
    variables = model.trainable_variables
    apply = tf.function(lambda: model.optimizer.apply([tf.zeros_like(v) for v in variables], variables))
    graph = apply.get_concrete_function().graph.as_graph_def()
    nodes = list(graph.node) + [node for function in graph.library.function for node in function.node_def]
    xla_calls = [node for node in nodes if node.attr["_XlaMustCompile"].b]
    assert len(xla_calls) == 1  # one update kernel, the table's
    _, mirrored = _train_embedding_model(tf.distribute.MirroredStrategy(["/cpu:0"]))
    for ours, op_by_op in zip(fused, mirrored):
        np.testing.assert_allclose(ours, op_by_op, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's grouped update")
def test_small_variables_update_together_to_the_values_of_one_update_each(tiny_config, monkeypatch):
    """A 1-layer tiny BERT classifier's variables (all below FUSED_UPDATE_MIN_SIZE) take one update per weight decay
    (two in the step's graph, not one per variable), and two steps end with every weight and moment equal
    to those of one update each (the update is elementwise: joining the values changes none)."""
    import tensorflow as tf

    def train(group):
        monkeypatch.setattr(optimization, "GROUP_SMALL_UPDATES", group)
        keras.utils.set_random_seed(0)
        model = BertClassifier(BertEncoder(dataclasses.replace(tiny_config, num_hidden_layers=1)), 2)
        model.compile(optimizer=create_optimizer(1e-2, 2, 1), jit_compile=False,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        rng = np.random.default_rng(1)
        for _ in range(2):
            ids = rng.integers(1, tiny_config.vocab_size, (4, 8)).astype("int32")
            model.train_on_batch({"input_word_ids": ids, "input_mask": np.ones_like(ids),
                                  "input_type_ids": np.zeros_like(ids)}, rng.integers(0, 2, 4).astype("int32"))
        variables = model.trainable_variables
        apply = tf.function(lambda: model.optimizer.apply([tf.zeros_like(v) for v in variables], variables))
        graph = apply.get_concrete_function().graph.as_graph_def()
        square_roots = sum(node.op == "Sqrt" for node in graph.node)
        return square_roots, len(variables), [v.numpy() for v in model.weights + model.optimizer.variables]

    grouped_roots, count, grouped = train(True)
    alone_roots, _, alone = train(False)
    # One square root each update (decayed kernels and tables; biases and LayerNorms), one for the clipping's norm.
    assert (grouped_roots, alone_roots) == (2 + 1, count + 1)
    assert len(grouped) == len(alone)
    for a, b in zip(grouped, alone):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's fused update")
def test_a_second_model_in_the_same_process_trains_after_the_first_is_gone(monkeypatch):
    """The fused update's compiled function is shared: it must not hold on to the first model's variables."""
    import gc

    import tensorflow as tf

    monkeypatch.setattr(optimization, "FUSED_UPDATE_MIN_SIZE", 0)  # every variable through the shared kernel
    first, weights = _train_embedding_model(tf.distribute.get_strategy())
    del first
    gc.collect()
    _, again = _train_embedding_model(tf.distribute.get_strategy())
    for ours, theirs in zip(weights, again):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)
