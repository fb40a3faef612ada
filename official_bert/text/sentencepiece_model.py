"""Reads a SentencePiece `spiece.model` and compiles it into a model that tokenizes as ALBERT's fast tokenizer.

tensorflow-text's `FastSentencepieceTokenize` kernel (which TFLite's tf-text registrar has) runs a
unigram Viterbi after SentencePiece's normalization: a dummy-prefix space, the precompiled charsmap
(greedy longest match), whitespace collapsing and "▁" for spaces. transformers' `AlbertTokenizerFast`
differs from plain SentencePiece in two ways, which the compiled model reproduces:

- normalization: Replace("``"/"''", '"'), NFKD, StripAccents, Lowercase before the charsmap. We write a
  new charsmap whose rules give, for each code point, the result of the whole chain
  (`albert_normalization.code_point_table`), plus the two Replace rules.
- user-defined symbols (ALBERT's `( ) " - . – £ €`) are added tokens: the raw text is split on them
  before normalization, and the text after each one starts a new word (gets its own "▁"). The charsmap
  maps each raw symbol to a private-use placeholder and a space; two extra pieces, the placeholder and
  "▁" + placeholder, stand for the symbol and are mapped back to its id after the kernel
  (`id_map`). A symbol that only appears after normalization (say "（" -> "(") stays a plain piece.
- control and unknown pieces ("<pad>", "<unk>", "[CLS]", ...) are in `tokenizers`' Unigram vocabulary, so
  text that normalizes to one of them gives its id; they become extra pieces too. Runs of `<unk>` ids are
  fused after the kernel (`SentencepieceTokenizer`).

The ModelProto is read and written at the protobuf wire level (no sentencepiece or generated proto
code at run time); pieces are appended and the normalizer spec replaced, the rest is kept byte for byte.
"""

import dataclasses
import struct

import numpy as np

from official_bert.text import albert_normalization
from official_bert.text.normalizer_model import build_double_array

# SentencePiece piece types (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_UNIGRAM = 1
# Private-use code points for the placeholders; tokenizers' NFKD/StripAccents/Lowercase keep them.
_PLACEHOLDER_CANDIDATES = range(0xF0000, 0xFFFFE)


def _varint(data, pos):
    result, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(data):
    """Protobuf wire format -> list of (field number, wire type, value, raw bytes of the whole field)."""
    fields, pos = [], 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(data):
            raise ValueError("truncated protobuf")
        fields.append((number, wire, value, data[start:pos]))
    return fields


def _bytes_field(number, value):
    return _encode_varint(number << 3 | 2) + _encode_varint(len(value)) + value


def _piece_bytes(piece, score, piece_type):
    body = (_bytes_field(1, piece.encode("utf-8")) + _encode_varint(2 << 3 | 5) + struct.pack("<f", score)
            + _encode_varint(3 << 3) + _encode_varint(piece_type))
    return _bytes_field(1, body)


class Charsmap:
    """A SentencePiece precompiled charsmap (darts-clone trie + NUL-terminated replacement strings).

    Args:
        blob: the `normalizer_spec.precompiled_charsmap` bytes (empty: the identity).
    """

    def __init__(self, blob):
        self.blob = bytes(blob)
        if blob:
            (trie_size,) = struct.unpack_from("<I", blob, 0)
            self._units = np.frombuffer(blob[4:4 + trie_size], np.uint32).astype(np.int64)
            self._strings = blob[4 + trie_size:]
        else:
            self._units = np.zeros(0, np.int64)

    def __eq__(self, other):
        return isinstance(other, Charsmap) and other.blob == self.blob

    def __hash__(self):
        return hash(self.blob)

    def lookup(self, text):
        """The replacement of exactly `text`, or None when it is no key."""
        key = text.encode("utf-8")
        units = self._units
        if not len(units) or not key:
            return None
        node = 0
        unit = int(units[0])
        for byte in key:
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6) ^ byte
            if node >= len(units):
                return None
            unit = int(units[node])
            if unit & ((1 << 31) | 0xFF) != byte:
                return None
        if not (unit >> 8) & 1:
            return None
        value = int(units[node ^ ((unit >> 10) << ((unit & (1 << 9)) >> 6))]) & ((1 << 31) - 1)
        return self._string(value)

    def _string(self, value):
        return self._strings[value:self._strings.index(b"\0", value)].decode("utf-8")

    def code_point_rules(self):
        """{code point: replacement} for every single code point that is a key (vectorised lookup)."""
        units = self._units
        if not len(units):
            return {}
        cps = np.arange(1, 0x110000, dtype=np.int64)
        cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]  # no surrogates
        data, lengths = _utf8_bytes(cps)
        node = np.zeros(len(cps), np.int64)
        unit = np.full(len(cps), units[0])
        alive = np.ones(len(cps), bool)
        offset = lambda u: (u >> 10) << ((u & (1 << 9)) >> 6)  # noqa: E731
        for step in range(4):
            active = alive & (step < lengths)
            nxt = node ^ offset(unit) ^ data[:, step]
            alive &= ~active | (nxt < len(units))
            active &= alive
            node = np.where(active, nxt, node)
            unit = np.where(active, units[np.minimum(node, len(units) - 1)], unit)
            alive &= ~active | ((unit & ((1 << 31) | 0xFF)) == data[:, step])
        alive &= ((unit >> 8) & 1) == 1
        leaf = np.minimum(node ^ offset(unit), len(units) - 1)
        values = units[leaf] & ((1 << 31) - 1)
        return {int(cp): self._string(int(v)) for cp, v in zip(cps[alive], values[alive])}


def _utf8_bytes(cps):
    """int64 [n] code points -> (int64 [n, 4] UTF-8 bytes, zero-padded; int64 [n] byte counts)."""
    lengths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
    data = np.zeros((len(cps), 4), np.int64)
    lead = np.array([0, 0, 0xC0, 0xE0, 0xF0])[lengths]
    for i in range(4):  # byte i of a character of n bytes holds bits 6 * (n - 1 - i) and up
        shift = 6 * np.maximum(lengths - 1 - i, 0)
        byte = (cps >> shift) & np.where(i == 0, 0xFF >> lengths, 0x3F)
        byte = np.where(i == 0, np.where(lengths == 1, cps, lead | byte), 0x80 | byte)
        data[:, i] = np.where(i < lengths, byte, 0)
    return data, lengths


def build_charsmap(rules):
    """{source str: replacement str} -> precompiled charsmap bytes (what `FastSentencepieceTokenize` reads)."""
    strings = bytearray()
    offsets, values = {}, {}
    for source, out in sorted(rules.items()):
        out_bytes = out.encode("utf-8")
        if out_bytes not in offsets:
            offsets[out_bytes] = len(strings)
            strings += out_bytes + b"\0"
        values[source.encode("utf-8")] = offsets[out_bytes]
    trie = build_double_array(values)
    # An empty unit has label 0, so a NUL byte in the text would walk into it and on from there (the
    # kernel does not stop at NUL): give empty units the label 0xFF, a byte UTF-8 never has.
    trie[1:][trie[1:] == 0] = 0xFF
    trie = trie.astype("<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(strings)


class SentencepieceModel:
    """The parts of a `spiece.model` the tokenizer needs, and its compiled form.

    Args:
        serialized: the file's bytes.
        source: where it came from, for error messages.
    """

    def __init__(self, serialized, source="spiece.model"):
        self.source = source
        try:
            self._fields = _fields(bytes(serialized))
            self.pieces, self.scores, self.types = [], [], []
            normalizer, trainer = {}, {}
            for number, _, value, _ in self._fields:
                if number == 1:
                    piece = {n: v for n, _, v, _ in _fields(value)}
                    self.pieces.append(piece.get(1, b"").decode("utf-8"))
                    self.scores.append(struct.unpack("<f", piece[2])[0] if 2 in piece else 0.0)
                    self.types.append(piece.get(3, NORMAL))
                elif number == 2:
                    trainer = {n: v for n, _, v, _ in _fields(value)}
                elif number == 3:
                    normalizer = {n: v for n, _, v, _ in _fields(value)}
        except (ValueError, IndexError, struct.error, UnicodeDecodeError) as error:
            raise ValueError(f"{source} is not a SentencePiece model ({error})") from None
        if not self.pieces:
            raise ValueError(f"{source} is not a SentencePiece model (no pieces)")
        if trainer.get(3, _UNIGRAM) != _UNIGRAM:
            raise ValueError(f"{source} is not a unigram SentencePiece model (model_type {trainer[3]}); "
                             "tensorflow-text's FastSentencepieceTokenizer runs unigram models only")
        if BYTE in self.types:
            raise ValueError(f"{source} has byte-fallback pieces, which ALBERT's tokenizer does not use")
        self.charsmap = Charsmap(bytes(normalizer.get(2, b"")))
        self.piece_to_id = {}
        for i, piece in enumerate(self.pieces):
            self.piece_to_id.setdefault(piece, i)
        self.unk_id = self.types.index(UNKNOWN) if UNKNOWN in self.types else None

    def user_defined_symbols(self):
        return [p for p, t in zip(self.pieces, self.types) if t == USER_DEFINED]

    def kernel_model(self, lower_case=True):
        """What `FastSentencepieceTokenize` runs: the normalization rules and the pieces it appends.

        Args:
            lower_case: the tokenizer's `do_lower_case`.

        Returns:
            `KernelModel`: `rules` {source str: replacement str} (the charsmap, matched greedily, longest
            first), `pieces` and `types` (this model's, then the appended ones: the kernel's ids index them),
            and `id_map` (int32 numpy: a kernel id -> the id it stands for).
        """
        table = albert_normalization.code_point_table(lower_case, self.charsmap)
        rules = {chr(cp): out for cp, out in table.items() if cp}  # darts-clone has no key "\0"
        rules["``"] = '"'
        rules["''"] = '"'
        used = set("".join(self.pieces)) | set("".join(rules.values()))
        free = (chr(cp) for cp in _PLACEHOLDER_CANDIDATES if cp not in table and chr(cp) not in used)
        unknown = next(free)  # what a placeholder character in the text becomes: a character of no piece
        pieces, scores, types = list(self.pieces), list(self.scores), list(self.types)
        id_map = list(range(len(self.pieces)))
        for symbol in self.user_defined_symbols():
            placeholder = next(free)
            rules[symbol] = placeholder + " "
            rules[placeholder] = unknown
            for piece in (placeholder, "\u2581" + placeholder):
                pieces.append(piece), scores.append(0.0), types.append(USER_DEFINED)
                id_map.append(self.piece_to_id[symbol])
        for i, piece_type in enumerate(self.types):
            if piece_type in (CONTROL, UNKNOWN):  # tokenizers' Unigram matches "<unk>", "<pad>" in text
                pieces.append(self.pieces[i]), scores.append(self.scores[i]), types.append(NORMAL)
                id_map.append(i)
        return KernelModel(rules, pieces, scores, types, np.array(id_map, np.int32))

    def compile(self, lower_case=True):
        """The model to give `FastSentencepieceTokenize`, and the id map to apply to its output.

        Args:
            lower_case: the tokenizer's `do_lower_case`.

        Returns:
            `(serialized ModelProto bytes, KernelModel)`: ids the kernel emits index `KernelModel.id_map`.
        """
        kernel = self.kernel_model(lower_case)
        first = len(self.pieces)
        extra = [_piece_bytes(p, s, t) for p, s, t in zip(kernel.pieces[first:], kernel.scores[first:],
                                                           kernel.types[first:])]
        normalizer = (_bytes_field(1, b"albert") + _bytes_field(2, build_charsmap(kernel.rules))
                      + bytes([3 << 3, 1, 4 << 3, 1, 5 << 3, 1]))
        body = b"".join(raw for number, _, _, raw in self._fields if number != 3)
        return body + b"".join(extra) + _bytes_field(3, normalizer), kernel


@dataclasses.dataclass(frozen=True)
class KernelModel:
    """The compiled model's normalization rules and pieces (see `SentencepieceModel.kernel_model`)."""

    rules: dict
    pieces: list
    scores: list
    types: list
    id_map: np.ndarray
