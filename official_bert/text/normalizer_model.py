"""Compiles a code-point mapping into a model for tensorflow-text's `FastBertNormalize` kernel.

The kernel reads a flatbuffer (`FastBertNormalizerModel`: a darts-clone double-array trie keyed by the
UTF-8 bytes of each code point, an encoded value per key, and a pool of replacement strings). Its
Python API only builds tensorflow-text's own mapping; this module builds the same structure for any
mapping, so the serving graph keeps the stock kernel (which TFLite and TF Serving ship) while the
normalization becomes the reference BERT one.
"""

import flatbuffers
import numpy as np

# Value encoding read by the kernel (tensorflow_text/core/kernels/fast_bert_normalizer.h).
_IS_DIFFERENT = 0x40000000
_LENGTH_BITS = 6
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1
_MAX_POOL_OFFSET = (1 << (32 - 2 - _LENGTH_BITS)) - 1

# darts-clone unit layout: bit 31 marks a value unit, bit 8 "has a value child", bits 0-7 the label,
# bits 10-30 the offset to the children (bit 9 would shift it by 8; unused while the array < 2**21).
_VALUE_FLAG = 1 << 31
_HAS_LEAF = 1 << 8
_MAX_DIRECT_OFFSET = 1 << 21


def _encode_values(mapping):
    """{code point: str} -> ({utf8 key: encoded value}, string pool bytes, value for code point 0)."""
    pool = bytearray()
    pool_offsets = {}
    values = {}
    zero_value = 0
    for cp, out in sorted(mapping.items()):
        out_bytes = out.encode("utf-8")
        if len(out_bytes) > _MAX_LENGTH:
            raise ValueError(f"replacement for U+{cp:04X} is {len(out_bytes)} bytes; the kernel allows {_MAX_LENGTH}")
        value = _IS_DIFFERENT
        if out_bytes:
            if out_bytes not in pool_offsets:
                pool_offsets[out_bytes] = len(pool)
                pool += out_bytes
            offset = pool_offsets[out_bytes]
            if offset > _MAX_POOL_OFFSET:
                raise ValueError("normalization string pool too large")
            value |= (offset << _LENGTH_BITS) | len(out_bytes)
        if cp == 0:
            zero_value = value  # darts-clone cannot store the empty key; the kernel keeps it aside.
        else:
            values[chr(cp).encode("utf-8")] = value
    return values, bytes(pool), zero_value


def build_double_array(values):
    """Builds a darts-clone double array for byte-string keys without NUL bytes.

    Args:
        values: {key bytes: non-negative int < 2**31}.

    Returns:
        uint32 numpy array, the `trie_array` the kernel traverses.
    """
    # Trie as nested dicts; the key b"" inside a node holds the value of the key ending there.
    root = {}
    for key, value in values.items():
        node = root
        for byte in key:
            node = node.setdefault(byte, {})
        node[b""] = value

    size = 1 << 16
    units = np.zeros(size, np.uint32)
    used = np.zeros(size, bool)  # slot holds a node or a value
    is_base = np.zeros(size, bool)  # slot is some node's children base (bases must be unique)
    used[0] = True
    is_base[0] = True  # the root sits at 0: a base of 0 would lead a NUL byte back to the root
    leaf_cursor = 1  # first slot that may be free, for single-child (value-only) nodes
    block_cursor = 0  # first 256-block that may have room, for nodes with children
    lanes = np.arange(256)

    def grow(needed):
        nonlocal units, used, is_base, size
        while needed > size:
            size *= 2
        units = np.concatenate([units, np.zeros(size - len(units), np.uint32)])
        used = np.concatenate([used, np.zeros(size - len(used), bool)])
        is_base = np.concatenate([is_base, np.zeros(size - len(is_base), bool)])

    queue = [(root, 0)]
    while queue:
        next_queue = []
        for node, node_id in queue:
            labels = sorted(0 if label == b"" else label for label in node)
            if labels == [0]:
                while leaf_cursor >= size or used[leaf_cursor] or is_base[leaf_cursor]:
                    leaf_cursor += 1
                    if leaf_cursor >= size:
                        grow(leaf_cursor + 1)
                base = leaf_cursor
            else:
                label_array = np.array(labels)
                block = block_cursor
                while True:
                    if block + 256 > size:
                        grow(block + 256)
                    taken = used[block + (lanes[:, None] ^ label_array[None, :])].any(axis=1)
                    free = np.flatnonzero(~taken & ~is_base[block:block + 256])
                    if free.size:
                        base = block + int(free[0])
                        break
                    if block == block_cursor:
                        block_cursor += 256
                    block += 256
            offset = node_id ^ base
            if offset >= _MAX_DIRECT_OFFSET:
                raise ValueError("normalization trie too large for darts-clone offsets")
            is_base[base] = True
            units[node_id] = (int(units[node_id]) & 0xFF) | (offset << 10) | (_HAS_LEAF if 0 in labels else 0)
            for label in labels:
                slot = base ^ label
                used[slot] = True
                if label == 0:
                    units[slot] = _VALUE_FLAG | node[b""]
                else:
                    units[slot] = label
                    next_queue.append((node[label], slot))
        queue = next_queue
    last = int(np.flatnonzero(used)[-1])
    return units[:last + 1].copy()


def build_normalizer_model(mapping):
    """Serializes a `FastBertNormalizerModel` flatbuffer for a code-point mapping.

    Args:
        mapping: {code point: replacement str}; code points not listed pass through unchanged.

    Returns:
        The model as bytes, for `tensorflow_text.FastBertNormalizer(model_buffer=...)` or the raw
        `FastBertNormalize` op.
    """
    values, pool, zero_value = _encode_values(mapping)
    trie = build_double_array(values)
    builder = flatbuffers.Builder(4 * len(trie) + len(pool) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool, np.uint8) if pool else np.zeros(0, np.uint8))
    trie_vector = builder.CreateNumpyVector(trie)
    builder.StartObject(4)
    builder.PrependBoolSlot(0, False, False)  # lower_case_nfd_strip_accents: informational only
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, zero_value, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())
