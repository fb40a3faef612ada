"""CoNLL-format tagged sentences (CoNLL-2003 NER): one token per line, its tag in the last column.

Sentences are separated by blank lines; `-DOCSTART-` lines (document boundaries) are skipped. Columns
are separated by whitespace; the first is the word, the last the tag, the ones between (POS, chunk) are
ignored. Tags are read as IOB2 (`B-` opens every entity) or IOB1 (`B-` only between two adjacent
entities of one type, the original CoNLL-2003 files); IOB1 is converted to IOB2 on reading.

Examples:

>>> train = read_conll("../shared/data/conll2003/hf-iob2/train.txt")
>>> len(train), train.words[0], train.tags[0][:3]
(14041, ['EU', 'rejects', 'German', ...], ['B-ORG', 'O', 'B-MISC'])
>>> label_names(train.tags)
['O', 'B-LOC', 'B-MISC', 'B-ORG', 'B-PER', 'I-LOC', 'I-MISC', 'I-ORG', 'I-PER']

A line with a word but no tag, a malformed tag, or (given `label_set`) a tag outside the label set is a
ValueError naming the file and the 1-based line. A file read as IOB2 whose entities open with `I-` and never
with `B-` is IOB1 read without `tag_scheme="iob1"`: a ValueError too; an IOB2 file with some `I-` openings
among `B-` ones is read as it is, with a warning.
"""

import dataclasses
import logging
import os
from typing import Iterable, List, Optional, Sequence

import tensorflow as tf

from official_bert.text_files import read_lines

logger = logging.getLogger(__name__)

TAG_SCHEMES = ("iob1", "iob2")
DOCSTART = "-DOCSTART-"

# File names of each split, first match wins: the HF/BERT-NER layout, then the original shared task's.
SPLIT_FILES = {
    "train": ("train.txt", "eng.train", "train"),
    "valid": ("valid.txt", "dev.txt", "eng.testa", "valid", "dev"),
    "test": ("test.txt", "eng.testb", "test"),
}


@dataclasses.dataclass
class ConllExamples:
    """Tagged sentences read from one file.

    Args:
        words: the words of each sentence.
        tags: the IOB2 tags of each sentence (same lengths as `words`).
        lines: the 1-based file line of each word (for messages).
        source: the file.
    """

    words: List[List[str]]
    tags: List[List[str]]
    lines: List[List[int]]
    source: str = ""

    def __len__(self) -> int:
        return len(self.words)


def conll_file_path(data_dir: str, split: str) -> str:
    """The file of `split` ("train", "valid" or "test") in `data_dir` (see `SPLIT_FILES`).

    Raises:
        ValueError: an unknown split.
        FileNotFoundError: none of the split's file names exists; the message lists them.
    """
    if split not in SPLIT_FILES:
        raise ValueError(f"split must be one of {', '.join(SPLIT_FILES)}, got {split!r}")
    for name in SPLIT_FILES[split]:
        path = os.path.join(data_dir, name)
        if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
            return path
    raise FileNotFoundError(f"CoNLL {split}: none of {', '.join(SPLIT_FILES[split])} found in {data_dir}")


def _check_tag(tag: str, where: str):
    if tag != "O" and not (len(tag) > 2 and tag[0] in "BI" and tag[1] == "-"):
        raise ValueError(f"{where}: tag {tag!r} is not O, B-<type> or I-<type>")


def iob1_to_iob2(tags: Sequence[str]) -> List[str]:
    """IOB1 -> IOB2: an `I-X` that does not continue an entity of type X becomes `B-X`.

    >>> iob1_to_iob2(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC', 'B-ORG']
    """
    out, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:]):
            tag = "B-" + tag[2:]
        out.append(tag)
        previous = tag
    return out


def _opens_entity(tag: str, previous: str) -> bool:
    """Whether `tag` starts an entity rather than continuing `previous`'s (at a sentence start, `previous` is O)."""
    return tag != "O" and (previous == "O" or previous[2:] != tag[2:])


def check_iob2(examples: ConllExamples):
    """Refuses IOB1 tags read as IOB2, and warns about IOB2 tags with entities opened by `I-`.

    In IOB2 every entity opens with `B-X`; in IOB1 with `I-X` (`B-X` only between two adjacent entities of
    type X). A file whose entities open with `I-X` (after O, at a sentence start, or after another type)
    and never with `B-X` is IOB1.

    Raises:
        ValueError: the file is IOB1; the message names it and the first such line, and says what to pass.
    """
    i_openings, b_openings, first = 0, 0, None
    for tags, lines in zip(examples.tags, examples.lines):
        previous = None  # a sentence start
        for tag, lineno in zip(tags, lines):
            if _opens_entity(tag, previous or "O"):
                if tag.startswith("B-"):
                    b_openings += 1
                else:
                    i_openings += 1
                    first = first or (lineno, tag, previous)
            previous = tag
    if not i_openings:
        return
    lineno, tag, previous = first
    where = f"line {lineno}: {tag!r} " + ("at a sentence start" if previous is None else f"after {previous!r}")
    if not b_openings:
        raise ValueError(f"{examples.source}: the tags are IOB1, not IOB2: I-<type> opens {i_openings} entities "
                         f"(first at {where}) and B-<type> none; pass --tag_scheme=iob1 (tag_scheme='iob1')")
    logger.warning("%s: I-<type> opens %d entities (first at %s) in an IOB2 file (B-<type> opens %d); they are read "
                   "as they are (--tag_scheme=iob1 would read each such I-<type> as B-<type>)",
                   examples.source, i_openings, where, b_openings)


def label_names(tag_sequences: Iterable[Sequence[str]]) -> List[str]:
    """The label set of some tag sequences: "O" first, then the other tags sorted."""
    tags = {tag for tags in tag_sequences for tag in tags}
    return ["O"] + sorted(tags - {"O"})


def read_conll(path: str, tag_scheme: str = "iob2", label_set: Optional[Sequence[str]] = None) -> ConllExamples:
    """Reads tagged sentences from a CoNLL file.

    Args:
        path: the file.
        tag_scheme: "iob2" or "iob1" (converted to IOB2).
        label_set: when given, every tag (after conversion) must be one of these.
    Returns: `ConllExamples` with IOB2 tags.
    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not UTF-8, a line with only a word (no tag), a malformed tag, or a tag outside
            `label_set`; the message names the file and the line. Or IOB1 tags read as "iob2" (see `check_iob2`).
    """
    if tag_scheme not in TAG_SCHEMES:
        raise ValueError(f"tag_scheme must be one of {', '.join(TAG_SCHEMES)}, got {tag_scheme!r}")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"no such CoNLL file: {path}")
    examples = ConllExamples([], [], [], source=path)
    words, tags, lines = [], [], []

    def close_sentence():
        if words:
            converted = iob1_to_iob2(tags) if tag_scheme == "iob1" else list(tags)
            if label_set is not None:
                known = set(label_set)
                for tag, lineno in zip(converted, lines):
                    if tag not in known:
                        raise ValueError(f"{path}:{lineno}: tag {tag!r} is not in the label set "
                                         f"({', '.join(label_set)})")
            examples.words.append(list(words))
            examples.tags.append(converted)
            examples.lines.append(list(lines))
        words.clear(), tags.clear(), lines.clear()

    for lineno, line in read_lines(path):
        fields = line.split()
        if not fields:
            close_sentence()
            continue
        if fields[0] == DOCSTART:
            close_sentence()
            continue
        if len(fields) < 2:
            raise ValueError(f"{path}:{lineno}: no tag after the word {fields[0]!r} (the tag is the last column)")
        _check_tag(fields[-1], f"{path}:{lineno}")
        words.append(fields[0])
        tags.append(fields[-1])
        lines.append(lineno)
    close_sentence()
    if tag_scheme == "iob2":
        check_iob2(examples)
    return examples
