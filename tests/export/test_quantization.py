"""`export.quantization`: Keras' int8 quantization with the heap frozen meanwhile. (The int8 export itself:
tests/export/test_int8_export.py.)"""


def test_quantizing_with_the_heap_frozen_gives_keras_int8_layers_and_leaves_gc_as_it_was():
    """`quantize` freezes the heap meanwhile (Keras collects garbage once per deleted kernel): the same int8 kernels
    as Keras' own `Model.quantize`, the freeze undone after, and a heap the process froze itself left frozen."""
    import gc

    import keras

    def model():
        keras.utils.set_random_seed(1)
        return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(4)])

    frozen_by_worker = gc.get_freeze_count() > 0  # tests/conftest.py freezes each worker's heap
    gc.unfreeze()  # this test needs a process that has not frozen its heap, then one that has
    try:
        _check_quantize_freezes_the_heap_meanwhile(model)
    finally:
        if frozen_by_worker:
            gc.collect()
            gc.freeze()


def _check_quantize_freezes_the_heap_meanwhile(model):
    """The checks of the test above, in a process whose heap is not frozen. `model`: () -> a new small model."""
    import gc
    import warnings

    import numpy as np

    from export.quantization import heap_frozen, quantize

    plain, frozen = model(), model()
    # Keras' own quantize; frozen, its collections scan only the objects made since (over a worker's whole heap, 11 s).
    # Freezing changes no value.
    with warnings.catch_warnings(), heap_frozen():
        warnings.filterwarnings("ignore", message="Layer .* does not have a `quantize` method implemented")
        plain.quantize("int8")
    assert gc.get_freeze_count() == 0
    quantize(frozen, "int8", word_table=False)
    assert gc.get_freeze_count() == 0
    for a, b in zip(plain.weights, frozen.weights, strict=True):
        assert a.name == b.name and a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    assert "int8" in {w.dtype for w in frozen.weights}

    gc.freeze()
    try:
        count = gc.get_freeze_count()
        quantize(model(), "int8", word_table=False)
        assert gc.get_freeze_count() > 0.9 * count  # not undone (objects freed meanwhile leave the count)
    finally:
        gc.unfreeze()
