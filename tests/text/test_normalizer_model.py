"""The darts-clone double array maps every key to its value and nothing else to anything; its layout is pinned."""

import hashlib
import random

import numpy as np

from official_bert.text import normalizer_model


def _lookup(units, key):
    """darts-clone's exactMatchSearch: the value of `key` (bytes), or None."""
    def unit(node):
        return int(units[node]) if node < len(units) else 0

    def offset(u):
        return (u >> 10) << ((u & (1 << 9)) >> 6)

    node = offset(unit(0))
    current = unit(0)
    for byte in key:
        node ^= byte
        current = unit(node)
        if current & ((1 << 31) | 0xFF) != byte:
            return None
        node ^= offset(current)
    if not (current >> 8) & 1:
        return None
    return unit(node) & ((1 << 31) - 1)


def _random_keys(seed, count, alphabet):
    rng = random.Random(seed)
    return {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))).encode(): rng.randrange(1 << 31)
            for _ in range(count)}


def test_every_key_maps_to_its_value_and_other_strings_to_nothing():
    alphabet = "abc\u00e9\u4e2d\U0001F600"  # few letters: keys that prefix one another, 1- to 4-byte characters
    values = _random_keys(0, 3000, alphabet)
    values.update({b"a": 1, b"ab": 2, b"abc": 3, b"\xff": 4})
    units = normalizer_model.build_double_array(values)
    assert units.dtype == np.uint32
    assert all(_lookup(units, key) == value for key, value in values.items())
    others = {key[:cut] for key in _random_keys(1, 3000, alphabet) for cut in range(1, len(key) + 1)}
    others |= {key + b"z" for key in values}
    assert all(_lookup(units, key) is None for key in others - values.keys())


def test_an_empty_mapping_is_the_root_alone():
    units = normalizer_model.build_double_array({})
    assert units.tolist() == [1 << 10] and _lookup(units, b"a") is None


def test_layout_is_unchanged():
    """The bytes the kernel reads, as the original per-node builder laid them out (sha256)."""
    alphabet = [chr(c) for c in range(0x20, 0x3000) if not 0xD800 <= c < 0xE000]
    units = normalizer_model.build_double_array(_random_keys(2, 2000, alphabet))
    assert hashlib.sha256(units.astype("<u4").tobytes()).hexdigest() == (
        "1b8920485e157f77ad7d83486fcdaf2e7c882473f9197620ff870a13c422bc9e")
    mapping = {cp: ("" if cp % 3 else chr(cp).lower() * (cp % 5)) for cp in range(0, 0x30000, 7)
               if not 0xD800 <= cp < 0xE000}
    model = normalizer_model.build_normalizer_model(mapping)
    assert hashlib.sha256(model).hexdigest() == "e35adc9308687fd98630a884e8ceb3b513c8c90da44ad1dedecfc4d293ab6328"
