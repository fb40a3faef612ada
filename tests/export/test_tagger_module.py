"""The in-graph entity chunking equals conlleval's (official_bert.metrics.tagging.get_entities) on any tags."""

import numpy as np
import pytest
import tensorflow as tf

from export.tagger_module import O, chunk_ends, chunk_starts, tag_tables
from official_bert.metrics.tagging import get_entities

LABELS = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-MISC", "I-MISC"]


def _graph_entities(tags):
    """Entities of one tag sequence with the exported graph's rules (O before the first and after the last)."""
    prefixes, types, type_names = tag_tables(LABELS)
    ids = [LABELS.index(t) for t in tags]
    prefix = tf.constant([prefixes[i] for i in ids], tf.int32)
    type_ = tf.constant([types[i] for i in ids], tf.int32)
    prev_prefix, prev_type = tf.concat([[O], prefix[:-1]], 0), tf.concat([[-1], type_[:-1]], 0)
    next_prefix, next_type = tf.concat([prefix[1:], [O]], 0), tf.concat([type_[1:], [-1]], 0)
    begins = np.flatnonzero(chunk_starts(prev_prefix, prefix, prev_type, type_).numpy())
    lasts = np.flatnonzero(chunk_ends(prefix, next_prefix, type_, next_type).numpy())
    assert len(begins) == len(lasts)
    return [(type_names[types[ids[b]]], int(b), int(e)) for b, e in zip(begins, lasts)]


def test_chunks_equal_conlleval_on_random_tag_sequences():
    rng = np.random.default_rng(0)
    for length in [1, 2, 3, 5, 8, 13] * 40:
        tags = [LABELS[i] for i in rng.integers(0, len(LABELS), length)]
        assert _graph_entities(tags) == get_entities(tags), tags


@pytest.mark.parametrize("tags", [["I-PER", "I-PER"], ["B-PER", "I-LOC"], ["E-PER", "I-PER"], ["O"], ["S-LOC", "S-LOC"],
                                  ["B-MISC", "O", "I-MISC", "B-MISC"]])
def test_chunks_equal_conlleval_on_edge_cases(tags):
    assert _graph_entities(tags) == get_entities(tags)


def test_labels_that_are_not_entity_tags_are_an_error_naming_them():
    assert tag_tables(["O", "B-PER", "I-PER"]) == ([0, 1, 2], [-1, 0, 0], ["PER"])
    with pytest.raises(ValueError, match=r"label 1 \('PER'\) is not an entity tag"):
        tag_tables(["O", "PER"])

