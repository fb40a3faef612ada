"""int8 weights for `export.saved_model --precision=int8`: Keras' `Model.quantize` on a loaded model, with the
heap frozen meanwhile (`heap_frozen`)."""

import contextlib


@contextlib.contextmanager
def heap_frozen():
    """Inside the block, a full garbage collection scans only the objects made in it (`gc.freeze`), unless the
    process froze its heap itself (then nothing changes). Keras' `Layer.__delattr__` runs `gc.collect()` for every
    variable it deletes, once per Dense kernel that `Model.quantize` replaces, each over the whole heap: the int8
    export of all-MiniLM-L6-v2 (37 kernels, 460k objects) in a fresh process took 10.8 s of CPU, 5.5-5.8 s frozen.
    One collection of the whole heap follows the block."""
    import gc

    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.collect()


def quantize(model, mode, word_table=True):
    """`model.quantize(mode)` in place, without Keras' warning for every layer it leaves float.

    Args:
        model: a Keras model (a task model, or a bare encoder).
        mode: a `Model.quantize` mode ("int8"), or None: nothing is done.
        word_table: also quantize the encoder's word-piece table (`BertEmbeddings.quantize_word_table`: Keras
            quantizes only layers without sublayers); not for a masked-LM model, whose head decodes with it.
    """
    if mode is None:
        return
    import warnings

    with warnings.catch_warnings(), heap_frozen():
        warnings.filterwarnings("ignore", message="Layer .* does not have a `quantize` method implemented")
        model.quantize(mode)
    if word_table:
        encoder = getattr(model, "encoder", model)
        encoder.embeddings.quantize_word_table()
