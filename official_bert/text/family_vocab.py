"""The tokenizer files of each family as one vocab object: WordPiece's list of tokens, RoBERTa's `BpeVocab`
(`vocab.json` + `merges.txt`, or a `tokenizer.json`), ALBERT's `SentencepieceVocab` (`spiece.model`); a user's vocab
file read as one, and refused when it is of another kind than the checkpoint's family reads.

Examples:

>>> read_vocab_file("out/sst2_roberta/vocab.json", "roberta")
BpeVocab(vocab_file='out/sst2_roberta/vocab.json', merges_file='out/sst2_roberta/merges.txt', vocab=None, merges=None)
"""

import dataclasses
import os
from typing import Optional

from official_bert.families import family_of
from official_bert.text.bpe_tokenizer import read_merges_txt, read_vocab_json
from official_bert.text.vocab_files import (TOKENIZER_JSON, bpe_from_tokenizer_json, check_added_tokens_json,
                                            check_model_vocab, read_tokenizer_json, wordpiece_from_tokenizer_json)
from official_bert.tokenizer_kinds import (BPE, BPE_FILES, DESCRIPTIONS, GOOGLE_SENTENCEPIECE_FILE, SENTENCEPIECE,
                                           SENTENCEPIECE_FILE, WORDPIECE, WORDPIECE_FILE, XLM_ROBERTA_FILE,
                                           tokenizer_kind)


@dataclasses.dataclass
class BpeVocab:
    """RoBERTa's tokenizer files, where a WordPiece model has its list of tokens (`vocab.txt`).

    Attributes:
        vocab_file: `vocab.json`, or the `tokenizer.json` that `vocab` and `merges` were read from.
        merges_file: `merges.txt` (None when read from a `tokenizer.json`).
        vocab: {token: id} read from a `tokenizer.json` (None: in `vocab_file`).
        merges: its `(left, right)` merges, highest priority first.
    """
    vocab_file: str
    merges_file: Optional[str] = None
    vocab: Optional[dict] = None
    merges: Optional[list] = None

    @classmethod
    def find(cls, directory) -> "BpeVocab":
        """The `vocab.json` + `merges.txt` of a checkpoint directory or model_dir, else the byte-level BPE of its
        `tokenizer.json` (all that transformers 5 saves); raises naming what is missing."""
        files = tokenizer_directory(os.fspath(directory))
        if os.path.isfile(os.path.join(files, XLM_ROBERTA_FILE)):
            raise ValueError(f"{files}: {family_of('xlm-roberta').no_tokenizer}")
        missing = [f for f in BPE_FILES if not os.path.isfile(os.path.join(files, f))]
        tokenizer_json = os.path.join(files, TOKENIZER_JSON)
        if missing and os.path.isfile(tokenizer_json):
            return cls.from_tokenizer_json(tokenizer_json)
        if missing:
            raise FileNotFoundError(f"{files}: a RoBERTa checkpoint needs its byte-level BPE files; missing "
                                    f"{', '.join(missing)} (or a {TOKENIZER_JSON} holding them)")
        vocab = cls(*(os.path.join(files, f) for f in BPE_FILES))
        vocab_json = read_vocab_json(vocab.vocab_file)
        if os.path.isfile(tokenizer_json):  # transformers reads it: it must say the same, with no added tokens
            if (vocab_json, read_merges_txt(vocab.merges_file)) != bpe_from_tokenizer_json(tokenizer_json):
                raise ValueError(f"{files}: vocab.json + merges.txt and tokenizer.json hold different byte-level "
                                 "BPEs; transformers reads tokenizer.json: keep the one the model was trained with")
        check_added_tokens_json(files, vocab_json)
        return vocab

    @classmethod
    def from_tokenizer_json(cls, path) -> "BpeVocab":
        """The byte-level BPE of a Hugging Face `tokenizer.json` (`vocab_files.bpe_from_tokenizer_json`)."""
        vocab, merges = bpe_from_tokenizer_json(path)
        return cls(os.fspath(path), None, vocab, merges)

    def __len__(self):  # the vocab size, as `len(tokens)` of a WordPiece vocab
        return max((self.vocab if self.vocab is not None else read_vocab_json(self.vocab_file)).values()) + 1


@dataclasses.dataclass
class SentencepieceVocab:
    """ALBERT's tokenizer file, where a WordPiece model has its list of tokens (`vocab.txt`).

    Attributes:
        model_file: `spiece.model`.
    """
    model_file: str

    @classmethod
    def find(cls, directory) -> "SentencepieceVocab":
        """The `spiece.model` (transformers' name; Google's releases: `30k-clean.model`) of a checkpoint directory or
        model_dir; raises naming the directory if there is none."""
        files = tokenizer_directory(os.fspath(directory))
        for name in (SENTENCEPIECE_FILE, GOOGLE_SENTENCEPIECE_FILE):
            if os.path.isfile(os.path.join(files, name)):
                vocab = cls(os.path.join(files, name))
                if os.path.isfile(os.path.join(files, TOKENIZER_JSON)):  # what transformers reads: no added tokens
                    check_model_vocab(read_tokenizer_json(os.path.join(files, TOKENIZER_JSON)),
                                      os.path.join(files, TOKENIZER_JSON))
                return vocab
        if os.path.isfile(os.path.join(files, TOKENIZER_JSON)):  # transformers 5 saves ALBERT's tokenizer so
            raise FileNotFoundError(
                f"{files}: an ALBERT checkpoint needs its SentencePiece model {SENTENCEPIECE_FILE}, and there is only "
                f"{TOKENIZER_JSON} (transformers 5 saves no {SENTENCEPIECE_FILE}); copy the {SENTENCEPIECE_FILE} of "
                "the model it was fine-tuned from (its hub repository's, e.g. albert/albert-base-v2) into it")
        raise FileNotFoundError(f"{files}: an ALBERT checkpoint needs its SentencePiece model; missing "
                                f"{SENTENCEPIECE_FILE} (or {GOOGLE_SENTENCEPIECE_FILE}, as Google's releases name it)")

    def __len__(self):  # the vocab size, as `len(tokens)` of a WordPiece vocab
        from official_bert.text.sentencepiece_model import SentencepieceModel

        with open(self.model_file, "rb") as f:
            return len(SentencepieceModel(f.read(), self.model_file).pieces)


def tokenizer_directory(directory) -> str:
    """Where a directory's tokenizer files are: a model_dir of ours keeps them in its `encoder/`."""
    encoder = os.path.join(directory, "encoder")
    if not any(os.path.isfile(os.path.join(directory, f))
               for f in (WORDPIECE_FILE, "tokenizer.json", *BPE_FILES, SENTENCEPIECE_FILE)) \
            and os.path.isdir(encoder):
        return encoder
    return directory


def read_vocab_file(path, model_type=None):
    """The vocab of one tokenizer file, as `find_family_vocab` returns it: a `BpeVocab` for `vocab.json` (with the
    `merges.txt` beside it) or a byte-level BPE `tokenizer.json`, a `SentencepieceVocab` for a `*.model`, else the
    tokens of a WordPiece `vocab.txt` (or `tokenizer.json`).

    Args:
        path: the file (a user's `--vocab_file`).
        model_type: the checkpoint's family, when known: a file of another kind than its tokenizer's is refused
            (`check_vocab_kind`).
    """
    path = os.fspath(path)
    if os.path.basename(path) == TOKENIZER_JSON:  # transformers' one file, of any kind
        vocab = (BpeVocab.from_tokenizer_json(path) if read_tokenizer_json(path)["model"].get("type") == "BPE"
                 else wordpiece_from_tokenizer_json(path)[0])
    elif tokenizer_kind(path) == BPE:
        vocab = BpeVocab.find(os.path.dirname(os.path.abspath(path)))
    elif tokenizer_kind(path) == SENTENCEPIECE:
        vocab = SentencepieceVocab(path)
    else:
        from official_bert.text.vocab import load_vocab

        vocab = load_vocab(path)
    if model_type is not None:
        check_vocab_kind(vocab, model_type, path)
    return vocab


def vocab_kind(vocab) -> str:
    """The tokenizer kind (`tokenizer_kinds.TOKENIZER_KINDS`) of a `find_family_vocab` / `read_vocab_file` vocab."""
    if isinstance(vocab, BpeVocab):
        return BPE
    return SENTENCEPIECE if isinstance(vocab, SentencepieceVocab) else WORDPIECE


def check_vocab_kind(vocab, model_type, source):
    """Raises, naming `source`, when `vocab` is of another tokenizer kind than the family's (an ALBERT
    `spiece.model` given to a BERT checkpoint, a `vocab.txt` to a RoBERTa one: it would run without error, and
    every id would be wrong)."""
    family = family_of(model_type)
    kind = vocab_kind(vocab)
    if kind != family.tokenizer_kind:
        files = " + ".join(family.tokenizer_files[0]) if family.tokenizer_files else WORDPIECE_FILE
        raise ValueError(f"{source}: a {DESCRIPTIONS[kind]}, but a {family.display_name} checkpoint's tokenizer is "
                         f"a {DESCRIPTIONS[family.tokenizer_kind]} ({files}); pass the vocab file of its own family")
