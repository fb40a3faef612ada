"""SQuAD v1.1 / v2.0 examples: from JSON files (each field type-checked, errors name its JSON path) or from
tensorflow-datasets records, and back to the JSON `data` list the metric reads.

Examples:

>>> examples = read_squad_json("dev-v1.1.json")
>>> examples_from_tfds("squad/v2.0", "validation", data_dir="~/tensorflow_datasets")
"""

import dataclasses
import json
from typing import Iterable, List, Mapping, Optional, Sequence

from official_bert.data.tfds_records import to_str
from official_bert.text_files import read_text

TFDS_NAMES = ("squad/v1.1", "squad/v2.0")


@dataclasses.dataclass
class SquadExample:
    """One question on one paragraph.

    Args:
        qas_id: the question's id.
        question: the question text.
        context: the paragraph, exactly as in the JSON.
        answers: gold answers, `[{"text": str, "answer_start": int (character offset)}]`.
        is_impossible: SQuAD v2.0 unanswerable.
    """

    qas_id: str
    question: str
    context: str
    answers: List[dict]
    is_impossible: bool = False


class _Field:
    """Type checks with the JSON path of the value in the error (`data[3].paragraphs[0].qas[5].id`)."""

    def __init__(self, source):
        self.source = source

    def get(self, record, key, where, kind, optional=False, default=None):
        if not isinstance(record, dict):
            raise ValueError(f"{self.source}: {where}: expected an object, got {_describe(record)}")
        if key not in record:
            if optional:
                return default
            raise ValueError(f"{self.source}: {where}.{key}: missing")
        value = record[key]
        ok = (isinstance(value, int) and not isinstance(value, bool)) if kind is int else isinstance(value, kind)
        if not ok:
            raise ValueError(f"{self.source}: {where}.{key}: expected {_KIND_NAMES[kind]}, got {_describe(value)}")
        return value


_KIND_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list", dict: "an object"}


def _describe(value) -> str:
    text = json.dumps(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def examples_from_json(squad, source: str = "SQuAD JSON") -> List[SquadExample]:
    """Examples from a parsed SQuAD JSON object (`{"data": [articles], "version": ...}`).

    Args:
        squad: the parsed file.
        source: named in errors (the file path).
    Raises:
        ValueError: a field missing or of the wrong type, named by its path, e.g.
            `data[3].paragraphs[0].qas[5].answers[0].answer_start`; or a qas id used twice.
    """
    field = _Field(source)
    articles = field.get(squad, "data", "(top level)", list)
    examples, seen = [], {}
    for a, article in enumerate(articles):
        paragraphs = field.get(article, "paragraphs", f"data[{a}]", list)
        for p, paragraph in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            context = field.get(paragraph, "context", where, str)
            for q, qa in enumerate(field.get(paragraph, "qas", where, list)):
                where_qa = f"{where}.qas[{q}]"
                qas_id = field.get(qa, "id", where_qa, str)
                question = field.get(qa, "question", where_qa, str)
                is_impossible = field.get(qa, "is_impossible", where_qa, bool, optional=True, default=False)
                answers = []
                for n, answer in enumerate(field.get(qa, "answers", where_qa, list, optional=True, default=[])):
                    where_answer = f"{where_qa}.answers[{n}]"
                    answers.append({"text": field.get(answer, "text", where_answer, str),
                                    "answer_start": field.get(answer, "answer_start", where_answer, int)})
                if qas_id in seen:
                    raise ValueError(f"{source}: {where_qa}.id: '{qas_id}' is already the id of {seen[qas_id]}")
                seen[qas_id] = where_qa
                examples.append(SquadExample(qas_id, question, context, answers, is_impossible))
    return examples


def read_squad_json(path: str) -> List[SquadExample]:
    """Reads a SQuAD v1.1 or v2.0 JSON file (`answers` may be absent, as in test files).

    Raises:
        ValueError: not UTF-8 text, invalid JSON, or a malformed field named by its path (see `examples_from_json`).
    """
    text = read_text(path)
    try:
        squad = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON: {e}") from None
    return examples_from_json(squad, source=path)


def squad_articles(examples: Sequence[SquadExample]) -> List[dict]:
    """The examples as a SQuAD JSON `data` list (one article, a paragraph per example), the input of
    `official_bert.metrics.squad.evaluate` for examples that did not come from a file (TFDS)."""
    qas = [{"context": e.context, "qas": [{"id": e.qas_id, "question": e.question, "answers": e.answers,
                                           "is_impossible": e.is_impossible}]} for e in examples]
    return [{"title": "", "paragraphs": qas}]


def has_gold_answers(examples: Sequence[SquadExample]) -> bool:
    """Whether the examples can be scored: some question has an answer or is marked unanswerable."""
    return any(e.answers or e.is_impossible for e in examples)


def examples_from_tfds_records(records: Iterable[Mapping], source: str = "tfds") -> List[SquadExample]:
    """Converts TFDS `squad/v1.1` or `squad/v2.0` records (dicts of NumPy values, as `tfds.as_numpy` yields).

    Args:
        records: dicts with `id`, `question`, `context`, `answers` (`{"text": [...], "answer_start": [...]}`)
            and, for v2.0, `is_impossible` (its `plausible_answers` are not gold answers and are dropped).
        source: named in errors.
    """
    examples = []
    for n, record in enumerate(records):
        try:
            texts = [to_str(t) for t in record["answers"]["text"]]
            starts = [int(s) for s in record["answers"]["answer_start"]]
            if len(texts) != len(starts):
                raise ValueError(f"{len(texts)} answer texts but {len(starts)} answer_start values")
            examples.append(SquadExample(
                qas_id=to_str(record["id"]), question=to_str(record["question"]),
                context=to_str(record["context"]),
                answers=[{"text": t, "answer_start": s} for t, s in zip(texts, starts)],
                is_impossible=bool(record.get("is_impossible", False))))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{source} record {n}: {type(e).__name__}: {e}") from None
    return examples


def examples_from_tfds(name: str, split: str, data_dir: Optional[str] = None) -> List[SquadExample]:
    """Loads a split of a prepared tensorflow-datasets SQuAD, never downloading.

    Args:
        name: "squad/v1.1" or "squad/v2.0".
        split: "train" or "validation".
        data_dir: the TFDS data directory; None for TFDS's default (`~/tensorflow_datasets`).
    Raises:
        FileNotFoundError: the dataset is not prepared there; the message says what to do.
    """
    import tensorflow_datasets as tfds

    if name not in TFDS_NAMES:
        raise ValueError(f"tfds name must be one of {', '.join(TFDS_NAMES)}, got {name!r}")
    try:
        dataset = tfds.load(name, split=split, data_dir=data_dir, download=False, shuffle_files=False)
    except (AssertionError, FileNotFoundError, tfds.core.registered.DatasetNotFoundError) as e:
        where = data_dir or "the default TFDS directory (~/tensorflow_datasets)"
        raise FileNotFoundError(
            f"TFDS dataset {name} is not prepared in {where}, and downloads are never made at run time. Pass "
            f"the SQuAD JSON files (--train_file / --predict_file), or prepare the dataset first "
            f"(`tfds build {name} --data_dir=DIR`) and pass DIR as --tfds_data_dir. ({type(e).__name__}: {e})"
        ) from None
    return examples_from_tfds_records(tfds.as_numpy(dataset), source=f"{name}[{split}]")
