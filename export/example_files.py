"""The example files `export.predict --input_file` answers: the formats the training and feature commands read.

Examples:

>>> read_examples("pairs.csv", ["text", "text_b"])  # header "text,text_b", then one pair a row
[(2, ['The cat sat.', 'A cat was sitting.']), ...]
"""

import os


def read_examples(input_file, order, columns=None, choices=False):
    """The examples of a file, as (line number, texts in the signature's inputs' order).

    The formats are those the training and feature commands read, by extension: `.txt` one example a line, `text`
    or `text_a ||| text_b` (as `tasks.extract_features`); `.csv` / `.tsv` a header row, then one example a row, the
    columns named as the inputs (`text`, `text_b`; SQuAD `question`, `context`), other columns ignored (as
    `tasks.run_classifier --train_file`); `.jsonl` / `.json` one JSON object a line with a field per input (other
    fields ignored), or an array of the texts in order. A multiple-choice model reads what `tasks.run_multiple_choice`
    reads (`data.multiple_choice`: SWAG's `.csv`, or JSON lines of SWAG rows or of `context` / `question` /
    `choices` objects); labels are ignored.

    Args:
        input_file: the file's path.
        order: the signature's input names, in order (`TextSignature.order`).
        columns: the columns (JSON fields) that hold the inputs, in that order; None: the inputs' names.
        choices: the model takes a context and a list of choices (multiple choice).

    Returns:
        a list of (line number, list of texts).

    Raises:
        FileNotFoundError: no such file.
        ValueError: an unknown extension or a malformed or blank line, naming the file and the line.
    """
    from official_bert.data.labeled_text_files import FORMATS, Columns, MissingColumnError, read_labeled_texts
    from official_bert.data.text_lines import parse_text_line
    from official_bert.text_files import path_exists, read_json_lines, read_lines

    if not path_exists(input_file):
        raise FileNotFoundError(f"no such input file: {input_file}")
    if choices:
        return _multiple_choice_examples(input_file, columns)
    names = [name.strip() for name in columns] if columns else list(order)
    hint = "" if columns else f"; name the columns for {', '.join(order)} with --columns"
    if len(names) != len(order):
        raise ValueError(f"{len(names)} column(s) ({', '.join(names)}) for the model's {len(order)} input(s) "
                         f"({', '.join(order)})")
    extension = os.path.splitext(input_file)[1].lower()
    if extension == ".txt":
        if columns:
            raise ValueError(f"--columns names the columns of a .csv, .tsv or .jsonl file; {input_file} is a .txt "
                             "file, whose lines hold the texts themselves ('text' or 'text_a ||| text_b')")
        return [(number, [text for text in parse_text_line(line, f"{input_file}:{number}") if text is not None])
                for number, line in read_lines(input_file)]
    if FORMATS.get(extension) in ("csv", "tsv"):
        try:
            table = read_labeled_texts(input_file, Columns(names[0], names[1] if len(names) == 2 else None),
                                       labeled=False, pair=len(names) == 2, skip_blank=False)
        except MissingColumnError as error:
            raise ValueError(f"{error}{hint}") from None
        return [(table.lines[i], [table.text_a[i]] + ([table.text_b[i]] if table.text_b is not None else []))
                for i in range(len(table))]
    if FORMATS.get(extension) != "jsonl":
        raise ValueError(f"{input_file}: unknown format '{extension}'; name the file .txt (a text, or 'text_a ||| "
                         f"text_b', a line), .csv or .tsv (a header row naming {', '.join(names)}) or .jsonl")
    examples = []
    expected = f"an object with the fields {', '.join(names)}, or an array of strings"
    for number, value in read_json_lines(input_file, skip_blank=False, expected=expected):  # one answer a line
        where = f"{input_file}:{number}"
        if isinstance(value, dict):
            missing = [name for name in names if name not in value]
            if missing:
                raise ValueError(f"{where}: no field {', '.join(missing)} (fields: {', '.join(value)}){hint}")
            value = [value[name] for name in names]
        if not isinstance(value, list) or not all(isinstance(text, str) for text in value):
            raise ValueError(f"{where}: expected {expected}")
        examples.append((number, value))
    return examples


def _multiple_choice_examples(input_file, columns):
    """(line number, [first segment, *choices]) of a file `tasks.run_multiple_choice` reads."""
    from official_bert.data.multiple_choice import read_multiple_choice

    if columns:
        raise ValueError(f"--columns: a multiple-choice model reads {input_file} as tasks.run_multiple_choice does "
                         f"(SWAG's fields, or context, question and choices)")
    if not input_file.lower().endswith((".csv", ".jsonl", ".json")):
        raise ValueError(f"{input_file}: a multiple-choice model reads SWAG's .csv or .jsonl (SWAG rows, or objects "
                         f"with context, question and choices)")
    examples = read_multiple_choice(input_file, skip_blank=False)
    return [(line, [context, *choices]) for line, context, choices in zip(examples.lines, examples.contexts,
                                                                           examples.choices)]
