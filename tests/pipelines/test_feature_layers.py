"""`resolve_layers`: the feature extractor's layer indices (`tasks.extract_features --layers`), negative ones
counted from the last block; one layer named twice is refused."""

import pytest

from official_bert.pipelines.feature_extractor import resolve_layers


def test_negative_indices_count_from_the_last_block():
    assert resolve_layers([-1, -2, 1, 0], 6) == [6, 5, 1, 0]
    assert resolve_layers([-7, -6], 6) == [0, 1]  # -(L+1): the embeddings, -L: the first block


@pytest.mark.parametrize("layers, message", [
    ([-1, 6], r"layer indices -1 and 6 both name layer 6 of a 6-layer model \(0 = embeddings, -1 = the last block\); "
              r"name each layer once"),
    ([0, -7], r"layer indices 0 and -7 both name layer 0 of a 6-layer model"),
    ([2, 2], r"layer index 2 is given twice; name each layer once"),
])
def test_one_layer_named_twice_is_refused_naming_both_spellings(layers, message):
    with pytest.raises(ValueError, match=message):
        resolve_layers(layers, 6)


def test_out_of_range_and_empty_are_refused():
    with pytest.raises(ValueError, match="layer index 7 is out of range for a 6-layer model"):
        resolve_layers([7], 6)
    with pytest.raises(ValueError, match="no layers given"):
        resolve_layers([], 6)
