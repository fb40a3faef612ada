"""One preprocessor for every family: raw strings -> the encoder's int inputs, packed as that family packs them.

`load_preprocessor(directory, seq_length)` reads a checkpoint directory (Hugging Face or Google) or a model_dir of
ours, finds the family (`config.json`'s `model_type`) and its tokenizer files, and returns a `Preprocessor`:
BERT and DistilBERT get WordPiece (`vocab.txt` or `tokenizer.json`) and `[CLS] A [SEP] B [SEP]`; RoBERTa gets its
byte-level BPE (`vocab.json` + `merges.txt`, or the `tokenizer.json` transformers 5 saves) and `<s> A </s></s> B </s>`
with one token type; ALBERT gets its SentencePiece model (`spiece.model`) and `[CLS] A [SEP] B [SEP]`. A
`tokenizer.json` with added tokens (`tok.add_tokens`), or one that disagrees with the files beside it, is refused.
"""

import logging
import os
import shutil

import keras

from official_bert.config import BertConfig
from official_bert.families import BERT_LAYOUT, ROBERTA_LAYOUT, family_of
from official_bert.hf_config import read_hf_config
from official_bert.text.bpe_tokenizer import BytePairTokenizer
# (check_vocab_kind, read_vocab_file: imported from here by run_checkpoint and others)
from official_bert.text.family_vocab import (BpeVocab, SentencepieceVocab, check_vocab_kind,  # noqa: F401
                                             read_vocab_file, tokenizer_directory)
from official_bert.text.pack_inputs import BertPackInputs
from official_bert.text.tokenizer import BertTokenizer
from official_bert.text.tokenizer_config import deserialize_tokenizer, serialize_tokenizer, write_bpe_files
from official_bert.text.vocab_files import find_vocab, write_vocab_file
from official_bert.tokenizer_kinds import (BPE, BPE_FILES, SENTENCEPIECE, SENTENCEPIECE_FILE, WORDPIECE_FILE,
                                           tokenizer_kind)

logger = logging.getLogger(__name__)



@keras.saving.register_keras_serializable(package="official_bert")
class Preprocessor(keras.layers.Layer):
    """Tokenizes and packs one or two batches of raw strings, in-graph, for one encoder family.

    Called as a layer: one [batch] string Tensor, or a list of one or two, in; the encoder's dict of int32
    [batch, seq_length] Tensors (`input_word_ids`, `input_mask`, `input_type_ids`) out; `tokenize`, `pack_tokens`
    and `pack` for tasks that need the pieces or the truncation flags. The same graph feeds `tf.data` in training and
    the exported signatures (no training/serving skew); texts whose pieces do not fit are cut longest-segment-first
    and flagged in `truncated`: nothing is cut silently.

    Args:
        tokenizer: a `BertTokenizer`, `BytePairTokenizer` or `SentencepieceTokenizer` (any layer mapping a [batch]
            string Tensor to ids, with `get_special_tokens_dict()`).
        seq_length: the packed length, special tokens included.
        layout: "bert" (`[CLS] A [SEP] B [SEP]`, type ids 0 then 1) or "roberta" (`<s> A </s></s> B </s>`, type
            ids 0).
        **kwargs: passed to `keras.layers.Layer`.

    Examples:

    >>> preprocessor = load_preprocessor("roberta-base", 128)
    >>> inputs = preprocessor([tf.constant(["The cat sat."]), tf.constant(["It purred."])])
    >>> inputs["input_word_ids"].shape
    TensorShape([1, 128])
    """

    def __init__(self, tokenizer, seq_length, layout="bert", **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.layout = layout
        self.special_tokens = tokenizer.get_special_tokens_dict()
        self.packer = BertPackInputs(self.seq_length, self.special_tokens, layout=layout)
        self.built = True  # no weights: nothing to build (a model read back by Keras would warn)

    def tokenize(self, text, with_offsets=False):
        """The tokenizer on a [batch] string Tensor: int32 ids [batch, (pieces)] (and int64 byte offsets)."""
        return self.tokenizer(text, with_offsets=with_offsets)

    def pack_tokens(self, segments):
        """Packs tokenized segments (one or two int32 RaggedTensors [batch, (pieces)]).

        Returns: `(inputs, truncated)`: the encoder's dict of int32 [batch, seq_length] Tensors, and a bool
            [batch] Tensor, True where some piece did not fit.
        """
        return self.packer(list(segments)), self.packer.truncated(segments)

    def pack(self, texts):
        """Tokenizes and packs a list of one or two [batch] string Tensors: `(inputs, truncated)`."""
        if not 1 <= len(texts) <= 2:
            raise ValueError(f"a Preprocessor takes one or two string tensors, got {len(texts)}")
        return self.pack_tokens([self.tokenize(t) for t in texts])

    def count_truncated(self, texts, batch_size=4096):
        """How many examples packing cuts, counted eagerly a batch at a time (the tokenizer's cost only).

        Args:
            texts: one or two equal-length sequences of strings (the segments of each example).
            batch_size: examples tokenized at once.
        """
        import tensorflow as tf

        count = 0
        for start in range(0, len(texts[0]), batch_size):
            segments = [self.tokenize(tf.constant(list(part[start:start + batch_size]), tf.string)) for part in texts]
            count += int(tf.math.count_nonzero(self.packer.truncated(segments)))
        return count

    def call(self, inputs):
        return self.pack(list(inputs) if isinstance(inputs, (list, tuple)) else [inputs])[0]

    def get_config(self):  # the tokenizer's vocabulary inline: a saved `.keras` model carries it
        return {**super().get_config(), "tokenizer": serialize_tokenizer(self.tokenizer),
                "seq_length": self.seq_length, "layout": self.layout}

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "tokenizer": deserialize_tokenizer(config["tokenizer"])})


def report_truncated(preprocessor, texts, what, limit, source=""):
    """Logs a warning when some examples do not fit the preprocessor's length (packing cuts them, the longest text
    first), and returns how many.

    Args:
        preprocessor: the `Preprocessor` that packs them.
        texts: one or two equal-length sequences of strings (the segments of each example).
        what: the examples, in words ("training examples", "texts").
        limit: the setting that sets the length, in words ("--max_seq_length=128").
        source: where they came from (a file or TFDS split), named after `what` when given.
    """
    count = preprocessor.count_truncated(texts)
    warn_truncated(count, len(texts[0]), f"{what} of {source}" if source else what, limit)
    return count


def warn_truncated(count, total, what, limit):
    """Logs a warning that `count` of `total` examples do not fit `limit` and are cut, when `count` > 0 (see
    `report_truncated`)."""
    if count:
        logger.warning("%s of %s %s (%.1f%%) do not fit %s and are cut, the longest text first", f"{count:,}",
                       f"{total:,}", what, 100 * count / total, limit)


def tokenizer_file_names(tokens):
    """The names of the files `write_tokenizer_files` writes for `tokens` (none for None)."""
    if tokens is None:
        return ()
    if isinstance(tokens, SentencepieceVocab):
        return (SENTENCEPIECE_FILE,)
    if isinstance(tokens, BpeVocab):
        return tuple(BPE_FILES)
    return (WORDPIECE_FILE,)


def write_tokenizer_files(tokens, directory) -> str:
    """Writes a model's tokenizer files into `directory`: `vocab.txt` from a list of tokens, a `BpeVocab`'s
    `vocab.json` + `merges.txt`, or a `SentencepieceVocab`'s `spiece.model`. Returns the path that
    `tokenizer_from_files` reads (`vocab.txt` / `vocab.json` / `spiece.model`)."""
    if isinstance(tokens, SentencepieceVocab):
        target = os.path.join(directory, SENTENCEPIECE_FILE)
        if os.path.abspath(tokens.model_file) != os.path.abspath(target):
            shutil.copyfile(tokens.model_file, target)
        return target
    if isinstance(tokens, BpeVocab) and tokens.vocab is not None:  # read from a tokenizer.json
        return write_bpe_files(tokens.vocab, tokens.merges, directory)
    if isinstance(tokens, BpeVocab):
        for source, name in zip((tokens.vocab_file, tokens.merges_file), BPE_FILES):
            target = os.path.join(directory, name)
            if os.path.abspath(source) != os.path.abspath(target):
                shutil.copyfile(source, target)
        return os.path.join(directory, BPE_FILES[0])
    path = os.path.join(directory, WORDPIECE_FILE)
    write_vocab_file(tokens, path)
    return path


def tokenizer_from_files(vocab_file, lower_case):
    """The tokenizer of a model's vocab file: a `BytePairTokenizer` for `vocab.json` (with the `merges.txt`
    beside it; casing does not apply), a `SentencepieceTokenizer` for ALBERT's `spiece.model`, else a
    `BertTokenizer` (`tokenizer_kinds.tokenizer_kind`)."""
    kind = tokenizer_kind(vocab_file)
    if kind == SENTENCEPIECE:
        from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

        return SentencepieceTokenizer(model_file=vocab_file, lower_case=lower_case)
    if kind == BPE:
        return BytePairTokenizer(vocab_file, os.path.join(os.path.dirname(vocab_file), BPE_FILES[1]))
    return BertTokenizer(vocab_file=vocab_file, lower_case=lower_case)


def text_preprocessor(vocab_file, lower_case, seq_length, tokenizer=None) -> Preprocessor:
    """The `Preprocessor` of a model's vocab file: WordPiece (`vocab.txt`) or ALBERT's `spiece.model` with BERT's
    packing, byte-level BPE (`vocab.json`) with RoBERTa's.

    Args:
        vocab_file: the vocab file (a str or path).
        lower_case: True for uncased models (not used by byte-level BPE).
        seq_length: the packed length, special tokens included.
        tokenizer: `tokenizer_from_files(vocab_file, lower_case)` when the caller has built it already (None: built
            here).

    Examples:

    >>> preprocessor = text_preprocessor("vocab.txt", True, 128)
    >>> inputs, truncated = preprocessor.pack([tf.constant(["The cat sat."])])
    >>> inputs["input_word_ids"].shape, truncated.numpy()
    (TensorShape([1, 128]), array([False]))
    """
    vocab_file = str(vocab_file)
    layout = ROBERTA_LAYOUT if tokenizer_kind(vocab_file) == BPE else BERT_LAYOUT
    tokenizer = tokenizer_from_files(vocab_file, lower_case) if tokenizer is None else tokenizer
    return Preprocessor(tokenizer, seq_length, layout=layout)


def model_type_of(directory) -> str:
    """The family of a checkpoint directory or model_dir: `model_type` of its `config.json` (Hugging Face; without
    one, what its keys or tokenizer files tell: `official_bert.hf_config`), `bert_config.json` (Google's, ours) or
    `albert_config.json` (Google's ALBERT); "bert" when it has none."""
    if os.path.isfile(os.path.join(directory, "config.json")):
        return read_hf_config(os.path.join(directory, "config.json")).model_type
    for name in ("bert_config.json", "albert_config.json"):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return BertConfig.from_json_file(path).model_type
    return "bert"


def find_family_vocab(directory, model_type, vocab_size=None):
    """The tokenizer files of a checkpoint directory (or model_dir) for a family, their casing and their source.

    Args:
        directory: a Hugging Face or Google checkpoint directory, or a model_dir of ours.
        model_type: the family (`BertConfig.model_type`).
        vocab_size: the model's `vocab_size`, checked when given (`check_vocab_size`: no more tokens than it).
    Returns: `(vocab, lower, source)`: `vocab` is WordPiece's list of tokens, a `BpeVocab` (RoBERTa) or a
        `SentencepieceVocab` (ALBERT); `lower` the casing found there (False for the byte-level BPE, which keeps
        case; None when unknown: see `resolve_casing`); `source` the file (or directory) named in errors.
    Raises:
        FileNotFoundError: the family's tokenizer files are missing (named); ValueError: XLM-RoBERTa, or a vocab
            larger than `vocab_size`.
    """
    files = tokenizer_directory(os.fspath(directory))
    family = family_of(model_type)
    if family.no_tokenizer:
        raise ValueError(f"{directory}: {family.no_tokenizer}; RoBERTa (vocab.json + merges.txt), ALBERT "
                         "(spiece.model), BERT and DistilBERT do")
    if family.tokenizer_kind == BPE:
        vocab = BpeVocab.find(files)
        lower, source = False, vocab.vocab_file
    elif family.tokenizer_kind == SENTENCEPIECE:
        from official_bert.text.sentencepiece_tokenizer import sentencepiece_lower_case

        vocab = SentencepieceVocab.find(files)
        lower, source = sentencepiece_lower_case(files), vocab.model_file
    else:
        vocab, lower, source = find_vocab(files)
    if vocab_size is not None:
        check_vocab_size(vocab, vocab_size, source)
    return vocab, lower, source


_logged_padded_tables = set()  # (source, tokens, vocab_size): each padded table is logged once


def check_vocab_size(vocab, vocab_size, source):
    """Raises, naming `source`, when `vocab` (any of `find_family_vocab`'s kinds) has more tokens than the model's
    `vocab_size`: an id past the embedding table has no row. Fewer tokens is a padded table (rows rounded up, e.g. to
    a multiple of 8, as transformers accepts): every id fits, the extra rows are never looked up; logged once."""
    tokens = len(vocab)
    if tokens > vocab_size:
        raise ValueError(f"{source}: {tokens} tokens, but the model's config has vocab_size={vocab_size}: ids "
                         f"{vocab_size}..{tokens - 1} have no embedding row")
    if tokens < vocab_size and (source, tokens, vocab_size) not in _logged_padded_tables:
        _logged_padded_tables.add((source, tokens, vocab_size))
        logger.info("%s: %d tokens for the model's %d embedding rows (config vocab_size): a padded table, whose last "
                    "%d rows no token uses", source, tokens, vocab_size, vocab_size - tokens)


def resolve_casing(lower, source, hint=""):
    """The casing to tokenize with: `lower`, or lower-casing with a warning naming `source` when it is unknown."""
    if lower is None:
        logger.warning("Casing of %s unknown; lower-casing%s", source, hint)
        return True
    return bool(lower)


def tokenizer_of(vocab, lower_case):
    """The in-graph tokenizer of a `find_family_vocab` vocab: `BytePairTokenizer`, `SentencepieceTokenizer` or
    `BertTokenizer` (casing does not apply to the byte-level BPE)."""
    if isinstance(vocab, BpeVocab) and vocab.vocab is not None:
        return BytePairTokenizer(vocab=vocab.vocab, merges=vocab.merges)
    if isinstance(vocab, BpeVocab):
        return BytePairTokenizer(vocab.vocab_file, vocab.merges_file)
    if isinstance(vocab, SentencepieceVocab):
        from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

        return SentencepieceTokenizer(model_file=vocab.model_file, lower_case=lower_case)
    return BertTokenizer(vocab=vocab, lower_case=lower_case)


def load_tokenizer(directory, model_type=None):
    """The family's in-graph tokenizer and packing layout for a checkpoint directory or model_dir.

    Args:
        directory: a Hugging Face or Google checkpoint directory, or a model_dir of ours.
        model_type: the family; None: read from the directory's config.
    Returns: `(tokenizer, layout)`: a `BytePairTokenizer` and "roberta", a `SentencepieceTokenizer` (ALBERT) and
        "bert", or a `BertTokenizer` and "bert".
    Raises:
        FileNotFoundError / ValueError: naming the directory and the files the family needs.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: not a directory (expected a checkpoint directory or a model_dir)")
    model_type = model_type or model_type_of(directory)
    vocab, lower, source = find_family_vocab(directory, model_type)
    return tokenizer_of(vocab, resolve_casing(lower, source)), family_of(model_type).packing_layout


def load_preprocessor(directory, seq_length) -> Preprocessor:
    """The `Preprocessor` of a checkpoint directory or model_dir, as its family packs inputs.

    Args:
        directory: a Hugging Face directory (`config.json` and the family's tokenizer files: `vocab.txt` or
            `tokenizer.json` for BERT and DistilBERT, `vocab.json` + `merges.txt` or `tokenizer.json` for RoBERTa,
            `spiece.model` (and `tokenizer_config.json`, if any) for ALBERT), a Google BERT directory
            (`bert_config.json` + `vocab.txt`), or a model_dir of ours.
        seq_length: the packed length.

    Examples:

    >>> preprocessor = official_bert.text.load_preprocessor("out/sst2_roberta", 128)
    >>> preprocessor(tf.constant(["a gripping film"]))["input_word_ids"]  # (1, 128): <s> ... </s> <pad> ...
    """
    tokenizer, layout = load_tokenizer(directory)
    return Preprocessor(tokenizer, seq_length, layout=layout)
