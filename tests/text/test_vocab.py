"""PieceTable: ids by piece (a repeated piece keeps its first id), held by a Keras layer as it is."""

import keras

from official_bert.text.vocab import PieceTable


def test_a_repeated_piece_keeps_its_first_id_and_a_given_mapping_is_used():
    table = PieceTable(["[PAD]", "a", "b", "a"])
    assert table.tokens == ("[PAD]", "a", "b", "a")
    assert table.token_to_id == {"[PAD]": 0, "a": 1, "b": 2}
    assert PieceTable(["x", None, "y"], {"x": 0, "y": 2}).token_to_id == {"x": 0, "y": 2}


def test_a_layer_holds_the_table_itself_not_a_tracked_copy_of_its_pieces():
    layer = keras.layers.Layer()
    table = PieceTable([f"piece{i}" for i in range(1000)])
    layer.pieces = table
    assert layer.pieces is table and type(layer.pieces.tokens) is tuple and type(layer.pieces.token_to_id) is dict
