"""Compiles a code-point mapping into a model for tensorflow-text's `FastBertNormalize` kernel.

The kernel reads a flatbuffer (`FastBertNormalizerModel`: a darts-clone double-array trie keyed by the
UTF-8 bytes of each code point, an encoded value per key, and a pool of replacement strings). Its
Python API only builds tensorflow-text's own mapping; this module builds the same structure for any
mapping, so the serving graph keeps the stock kernel (which TFLite and TF Serving ship) while the
normalization becomes the reference BERT one.

The double array is built level by level (`build_double_array`): the trie's nodes at depth d are the
distinct d-byte prefixes of the keys, in byte order. Each node gets a base slot, and its children (and
its value, under label 0) sit at `base ^ label`. A node that holds only a value (a leaf: most nodes,
one per key) takes the next free slot; the leaves between two other nodes of a level are placed
together with numpy. A node with children takes the first base in the first 256-slot block, from a
cursor on, where all its labels land on free slots. Bases are unique and never slot 0 (the root).
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
_XOR = np.arange(256)[:, None] ^ np.arange(256)[None, :]  # [256, 256]: lane ^ label


def _encode_values(mapping):
    """{code point: str} -> (int64 [n] code points, ascending, without 0; int64 [n] their encoded values;
    the string pool bytes; the value of code point 0, which darts-clone cannot store: the kernel keeps it aside)."""
    code_points = sorted(mapping)
    outs = list(map(mapping.__getitem__, code_points))
    pool = bytearray()
    encoded = {}  # replacement -> value; the pool holds each once, in code-point order
    for out in dict.fromkeys(outs):
        out_bytes = out.encode("utf-8")
        if len(out_bytes) > _MAX_LENGTH:
            cp = code_points[outs.index(out)]
            raise ValueError(f"replacement for U+{cp:04X} is {len(out_bytes)} bytes; the kernel allows {_MAX_LENGTH}")
        value = _IS_DIFFERENT
        if out_bytes:
            if len(pool) > _MAX_POOL_OFFSET:
                raise ValueError("normalization string pool too large")
            value |= (len(pool) << _LENGTH_BITS) | len(out_bytes)
            pool += out_bytes
        encoded[out] = value
    values = np.fromiter(map(encoded.__getitem__, outs), np.int64, len(outs))
    code_points = np.array(code_points, np.int64)
    has_zero = int(len(code_points) > 0 and code_points[0] == 0)
    zero_value = int(values[0]) if has_zero else 0
    return code_points[has_zero:], values[has_zero:], bytes(pool), zero_value


def _key_rows(joined, lengths):
    """Keys as one bytes string and int64 [n] lengths -> uint8 [n, longest] keys, zero-padded."""
    rows = np.zeros((len(lengths), int(lengths.max(initial=0))), np.uint8)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)  # [len(joined)] where each byte's key starts
    rows[np.repeat(np.arange(len(lengths)), lengths), np.arange(len(joined)) - starts] = np.frombuffer(joined, np.uint8)
    return rows


def _sorted_keys(values):
    """{key bytes: value} -> (uint8 [n, longest] keys, zero-padded; int64 [n] lengths; int64 [n] values),
    in key order."""
    lengths = np.fromiter(map(len, values), np.int64, len(values))
    rows = _key_rows(b"".join(values), lengths)
    # Keys have no NUL byte, so zero padding sorts a key before those it prefixes, as bytes do.
    order = np.lexsort(rows.T[::-1]) if rows.size else np.arange(len(values))
    return rows[order], lengths[order], np.fromiter(values.values(), np.int64, len(values))[order]


def _levels(rows, lengths):
    """The trie's nodes per depth d: int64 [nodes at d] the first row (in key order) of each d-byte prefix."""
    starts = np.zeros(len(rows), bool)  # [n] row starts a new prefix of the current depth
    starts[:1] = True
    levels = [np.zeros(1, np.int64)]  # the root: the empty prefix
    for depth in range(1, rows.shape[1] + 1):
        starts[1:] |= rows[1:, depth - 1] != rows[:-1, depth - 1]
        levels.append(np.flatnonzero(starts & (lengths >= depth)))
    return levels


def build_double_array(values):
    """Builds a darts-clone double array for byte-string keys without NUL bytes.

    Args:
        values: {key bytes: non-negative int < 2**31}.

    Returns:
        uint32 numpy array, the `trie_array` the kernel traverses.
    """
    return _double_array(*_sorted_keys(values))


def _double_array(rows, lengths, key_values):
    """`build_double_array` of keys uint8 [n, longest] (zero-padded, in byte order), int64 [n] lengths and values."""
    if not len(rows):  # the root alone: no value, no children, its (unused) base at slot 1
        return np.array([1 << 10], np.uint32)
    levels = _levels(rows, lengths)
    units = np.zeros(1 << 16, np.uint32)
    used = np.zeros(1 << 16, bool)  # slot holds a node or a value
    is_base = np.zeros(1 << 16, bool)  # slot is some node's children base (bases must be unique)
    used[0] = True
    is_base[0] = True  # the root sits at 0: a base of 0 would lead a NUL byte back to the root
    leaf_cursor = 1  # slots before it are taken, for value-only nodes
    block_cursor = 0  # 256-slot blocks before it had no room for a node with children
    label_slots = {}  # (has value, labels bytes) -> int [labels, 256]: lane ^ label, the slots of base block + lane

    def grow(needed):
        """Doubles the arrays until they hold `needed` slots."""
        nonlocal units, used, is_base
        size = len(units)
        if needed <= size:
            return
        while needed > size:
            size *= 2
        units, used, is_base = (np.concatenate([a, np.zeros(size - len(a), a.dtype)]) for a in (units, used, is_base))

    def place_leaves(count):
        """Bases of `count` value-only nodes: the next free slots."""
        nonlocal leaf_cursor
        window = count + 1024
        while True:
            grow(leaf_cursor + window)
            span = slice(leaf_cursor, leaf_cursor + window)
            free = np.flatnonzero(~(used[span] | is_base[span]))[:count]
            if len(free) == count:
                break
            window *= 2
        bases = leaf_cursor + free
        used[bases] = is_base[bases] = True  # the value sits at base ^ 0
        leaf_cursor = int(bases[-1]) + 1
        return bases

    def place_node(labels, has_value):
        """Base of a node with children `labels`: the first, in the first block from the cursor with one, whose
        slots (base ^ label, and base itself if the node has a value) are free and that is no other node's base."""
        nonlocal block_cursor
        key = (has_value, labels.tobytes())
        if key not in label_slots:
            label_slots[key] = _XOR[np.concatenate([[0], labels]) if has_value else labels]
        block = block_cursor
        while True:
            grow(block + 256)
            taken = np.take(used[block:block + 256], label_slots[key]).any(axis=0) | is_base[block:block + 256]
            lane = int(taken.argmin())
            if not taken[lane]:
                break
            block += 256
        block_cursor = block
        base = block + lane
        used[base ^ labels] = is_base[base] = True
        used[base] |= has_value
        return base

    slots = np.zeros(1, np.int64)  # [nodes at depth] the slot of each node; the root sits at 0
    for depth, first in enumerate(levels):
        children = levels[depth + 1] if depth + 1 < len(levels) else np.zeros(0, np.int64)
        # Node k's children are the next level's nodes child_start[k]:child_start[k + 1].
        parents = np.searchsorted(first, children, side="right") - 1
        child_start = np.searchsorted(parents, np.arange(len(first) + 1))
        child_labels = rows[children, depth].astype(np.int64) if len(children) else np.zeros(0, np.int64)
        has_value = lengths[first] == depth
        bases = np.zeros(len(first), np.int64)
        # Nodes in order; the leaves before each other node (and after the last) are placed together.
        others = np.flatnonzero(~has_value | (child_start[1:] > child_start[:-1])).tolist()
        bounds = child_start.tolist()
        for start, stop in zip([0] + [k + 1 for k in others], others + [len(first)]):
            if stop > start:
                bases[start:stop] = place_leaves(stop - start)
            if stop < len(first):
                bases[stop] = place_node(child_labels[bounds[stop]:bounds[stop + 1]], bool(has_value[stop]))
        offsets = slots ^ bases
        if offsets.max() >= _MAX_DIRECT_OFFSET:
            raise ValueError("normalization trie too large for darts-clone offsets")
        units[slots] |= (offsets << 10).astype(np.uint32) | np.where(has_value, _HAS_LEAF, 0).astype(np.uint32)
        units[bases[has_value]] = _VALUE_FLAG | key_values[first[has_value]]
        # Children sit at base ^ label (marked used when placed) and hold their label.
        slots = np.repeat(bases, np.diff(child_start)) ^ child_labels
        units[slots] = child_labels
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
    code_points, values, pool, zero_value = _encode_values(mapping)
    lengths = 1 + (code_points >= 0x80) + (code_points >= 0x800) + (code_points >= 0x10000)  # UTF-8 bytes
    # UTF-8 keeps code-point order: the keys are sorted already.
    joined = code_points.astype("<u4").tobytes().decode("utf-32-le").encode("utf-8")
    trie = _double_array(_key_rows(joined, lengths), lengths, values)
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
