"""Pruning: layer importance and dropping layers (a smaller model that loads and exports), magnitude pruning to a
target sparsity with its per-kernel report."""

import keras
import numpy as np
import pytest
from classifier_model_dirs import mrpc_task_info, write_classifier_model_dir

from official_bert import BertConfig
from official_bert import model_dir as model_dirs
from official_bert.compression.distiller import Distiller
from official_bert.compression.pruning import (MagnitudePruning, layer_importance, layers_to_keep,
                                               polynomial_sparsity, prune_by_magnitude, prunable_kernels,
                                               sparsity_report)
from official_bert.compression.student import copy_teacher_weights, student_config

pytestmark = pytest.mark.slow

INFO = mrpc_task_info()


def _batches(count=2, batch=8, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield ({"input_word_ids": rng.integers(1000, 2000, (batch, seq)).astype("int32"),
                "input_mask": np.ones((batch, seq), "int32"), "input_type_ids": np.zeros((batch, seq), "int32")},
               rng.integers(0, 2, batch))


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(4)
    config = BertConfig(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.5)
    return model_dirs.build_task_model(model_dirs.CLASSIFICATION, config, INFO)


def test_a_layer_pruned_model_is_smaller_and_loads_and_exports(model, shared_data, tmp_path):
    from export.saved_model import export
    scores = layer_importance(model, lambda c: model_dirs.build_task_model(model_dirs.CLASSIFICATION, c, INFO),
                              _batches())
    assert len(scores) == 3 and all(np.isfinite(scores))
    keep = layers_to_keep(scores, 2)
    assert keep == sorted(np.argsort(scores)[1:].tolist())
    pruned = model_dirs.build_task_model(model_dirs.CLASSIFICATION, student_config(model.encoder.config, keep), INFO)
    copy_teacher_weights(pruned, model, keep)
    assert pruned.count_params() < model.count_params()

    vocab = shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"
    path = write_classifier_model_dir(tmp_path / "pruned", pruned, INFO, vocab)
    loaded = model_dirs.load_model_dir(str(path))
    assert loaded.config.num_hidden_layers == 2
    x, _ = next(_batches(1))
    np.testing.assert_allclose(loaded.model(x), pruned(x), atol=1e-5)
    version = export(str(path), str(tmp_path / "export"))
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file() and version.endswith("1")
    with pytest.raises(ValueError, match="--keep_layers"):
        layers_to_keep(scores, 4)


def test_polynomial_schedule():
    assert polynomial_sparsity(0, 100, 0.5) == 0.0
    assert polynomial_sparsity(75, 100, 0.5) == pytest.approx(0.5) and polynomial_sparsity(99, 100, 0.5) == 0.5
    assert 0 < polynomial_sparsity(20, 100, 0.5) < polynomial_sparsity(40, 100, 0.5) < 0.5


def test_magnitude_pruning_zeroes_the_smallest_weights_of_each_kernel():
    """The head, pooler and embeddings stay dense; each transformer kernel loses its smallest 30%."""
    keras.utils.set_random_seed(5)
    config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    model = model_dirs.build_task_model(model_dirs.CLASSIFICATION, config, INFO)
    kernels = prunable_kernels(model)
    assert len(kernels) == 6  # query, key, value, attention output, intermediate, output
    before = {path: v.numpy().copy() for path, v in kernels.items()}
    prune_by_magnitude(kernels, 0.3)
    report = sparsity_report(model)
    for path, values in before.items():
        kept = np.abs(values) > np.quantile(np.abs(values), 0.3)  # the reference: numpy's quantile
        np.testing.assert_array_equal(kernels[path].numpy() != 0, kept)
        assert report[path] == pytest.approx(0.3, abs=0.02)
    assert report["total"] == pytest.approx(0.3, abs=0.01)
    assert all("classifier" not in path and "pooler" not in path for path in report)


def test_pruning_while_distilling_reaches_the_target(model):
    keras.utils.set_random_seed(6)
    student = model_dirs.build_task_model(model_dirs.CLASSIFICATION, student_config(model.encoder.config, [0, 2]),
                                          INFO)
    copy_teacher_weights(student, model, [0, 2])
    distiller = Distiller(student, model)
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3))
    x, y = next(_batches(1, batch=16))
    distiller.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[MagnitudePruning(student, 8, 0.6, every=2)])
    report = sparsity_report(student)
    assert report["total"] == pytest.approx(0.6, abs=0.01)
    assert all(value == pytest.approx(0.6, abs=0.02) for value in report.values())
