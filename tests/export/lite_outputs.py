"""Comparing a LiteRT signature's outputs with the SavedModel's (a helper of the export tests)."""

import numpy as np


def assert_lite_equals_saved(lite_outputs, saved_outputs, atol=1e-5, real_positions=None):
    """Every LiteRT output equals the SavedModel's: floats within `atol`, the rest (strings too) exactly.

    Args:
        lite_outputs: dict name -> numpy array, from a LiteRT signature runner.
        saved_outputs: dict name -> Tensor, from the SavedModel signature; may hold more outputs.
        atol: absolute tolerance of float outputs.
        real_positions: optional bool [batch, seq]; outputs of that leading shape are compared only there.
    """
    assert set(lite_outputs) <= set(saved_outputs)
    for name, value in lite_outputs.items():
        expected = saved_outputs[name].numpy()
        assert value.shape == expected.shape, name
        if real_positions is not None and value.shape[:2] == real_positions.shape:
            value, expected = value[real_positions], expected[real_positions]
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, atol=atol, rtol=1e-5, err_msg=name)  # rtol: fused GELU rounding
        else:
            np.testing.assert_array_equal(value, expected, err_msg=name)
