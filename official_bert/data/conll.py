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
ValueError naming the file and the 1-based line.
"""

import dataclasses
import os
from typing import Iterable, List, Optional, Sequence

import tensorflow as tf

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
        ValueError: a line with only a word (no tag), a malformed tag, or a tag outside `label_set`; the
            message names the file and the line.
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

    with tf.io.gfile.GFile(path, "r") as f:
        for lineno, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                close_sentence()
                continue
            if fields[0] == DOCSTART:
                close_sentence()
                continue
            if len(fields) < 2:
                raise ValueError(f"{path}:{lineno}: no tag after the word {fields[0]!r} (the tag is the last "
                                 f"column)")
            _check_tag(fields[-1], f"{path}:{lineno}")
            words.append(fields[0])
            tags.append(fields[-1])
            lines.append(lineno)
    close_sentence()
    return examples
