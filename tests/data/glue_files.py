"""Hand-written GLUE TSV files for the reader tests: a file of lines, MNLI's headers and rows."""


def write_tsv(tmp_path, name, lines, ending="\n", final_newline=True):
    """Writes `lines` joined by `ending` to `tmp_path / name` (UTF-8); returns the path as a str."""
    path = tmp_path / name
    path.write_bytes((ending.join(lines) + (ending if final_newline else "")).encode("utf-8"))
    return str(path)


MNLI_TRAIN_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                     "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label")
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER.replace("label1\t", "label1\tlabel2\tlabel3\tlabel4\tlabel5\t")
MNLI_TEST_HEADER = MNLI_TRAIN_HEADER.rsplit("\tlabel1", 1)[0]


def mnli_row(index, a, b, labels):
    """One MNLI line: index, the parse columns, the two sentences and `labels`."""
    return "\t".join([str(index), "p", "q", "fiction", "(x)", "(y)", "(X)", "(Y)", a, b] + labels)
