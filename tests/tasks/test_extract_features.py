"""tasks.extract_features on real text with all-MiniLM-L6-v2: Google's JSON-lines format, the npz form, pooling
and layer combinations, equality with the encoder's own outputs, streaming, and bad input. The command lines
run as children of one process (`forked_commands`): TensorFlow is imported once for all of them."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow
TEXTS = [("Who was Jim Henson ?", "Jim Henson was a puppeteer"),
         ("The unaffable tokenizer meets Zürich's café.", None)]


def _lines():
    return "".join(f"{a} ||| {b}\n" if b else f"{a}\n" for a, b in TEXTS)


_BAD_INPUT = [
    ("", "--layers=-1", "input.txt: the input file is empty"),
    ("fine\nleft side ||| \n", "--layers=-1", "input.txt:2: the second text of the '|||' pair is empty"),
    ("fine\n", "--layers=-1,x", "--layers=-1,x: expected comma-separated integers"),
    ("fine\n", "--layers=-9", "--layers=-9: layer index -9 is out of range for a 6-layer model"),
]
_PROC = pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux's /proc")
_UNREADABLE = [
    (b"fine\ncaf\xe9 au lait\n", "out.jsonl",
     "{tmp}/input.txt:2: not UTF-8 text (byte 0xe9 at column 4); save the file as UTF-8"),
    pytest.param(b"fine\n", "/proc/version", "--output_file=/proc/version cannot be written: ", marks=_PROC),
    (b"fine\n", "new.csv", "--output_file={tmp}/new.csv: unknown format '.csv'; name the file .npz"),
    (b"fine\n", "notes.jsonl", "--output_file={tmp}/notes.jsonl already exists; name a new file, or pass "
                                "--overwrite to replace it"),
    (b"fine\n", "input.jsonl", "--output_file={tmp}/input.jsonl is the input file (--input_file); name another file"),
    (b"fine\n", "notes.txt/out.jsonl",
     "--output_file={tmp}/notes.txt/out.jsonl cannot be written: {tmp}/notes.txt is a file, not a folder"),
]


@pytest.fixture(scope="module")
def runs(minilm_dir, tiny_checkpoint, tmp_path_factory):
    """name -> (CompletedProcess, its directory) of every `python -m tasks.extract_features` command line here, each
    run in a directory of its own holding its input.txt."""
    from tests.tiny_families import roberta_directory

    root = tmp_path_factory.mktemp("runs")
    commands, directories = {}, {}

    def add(name, content, *args):
        directory = directories[name] = root / name
        directory.mkdir()
        source = directory / "input.txt"
        source.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        commands[name] = ("tasks.extract_features",
                          [f"--input_file={source}", *[arg.format(tmp=directory) for arg in args]])

    add("json_lines", _lines(), "--output_file={tmp}/features.jsonl", f"--init_checkpoint={minilm_dir}",
        "--layers=-1,-2,-7", "--max_seq_length=64")
    add("npz", _lines(), "--output_file={tmp}/features.npz", f"--init_checkpoint={minilm_dir}",
        "--layers=-1,-2,-3,-4", "--pooling=mean", "--combine=concat")
    for index, (content, flag, _) in enumerate(_BAD_INPUT):
        add(f"bad{index}", content, "--output_file={tmp}/out.jsonl", f"--init_checkpoint={minilm_dir}", flag)
    for index, case in enumerate(_UNREADABLE):
        content, output, _ = case.values if hasattr(case, "values") else case
        if output.startswith("/proc") and not os.path.isfile(output):
            continue
        add(f"unreadable{index}", content, f"--output_file={{tmp}}/{output}" if not output.startswith("/") else
            f"--output_file={output}", f"--init_checkpoint={tiny_checkpoint}", "--layers=-1", "--max_seq_length=32",
            *(["--overwrite"] if output.startswith(("/proc", "input")) else []))  # (an input even with it)
        for name in ("notes.txt", "notes.jsonl"):
            (directories[f"unreadable{index}"] / name).write_text("mine\n")
        if output == "input.jsonl":  # the input under another name
            os.symlink(directories[f"unreadable{index}"] / "input.txt", directories[f"unreadable{index}"] / output)
    bare = root / "minilm_no_vocab"  # MiniLM without its tokenizer.json, its vocab given as --vocab_file
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        os.symlink(minilm_dir / name, bare / name)
    spec = json.loads((minilm_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    (root / "vocab.txt").write_text("\n".join(sorted(spec, key=spec.get)) + "\n", encoding="utf-8")
    add("no_vocab", _lines(), "--output_file={tmp}/out.jsonl", f"--init_checkpoint={bare}", "--layers=-1")
    add("vocab_file", _lines(), "--output_file={tmp}/features.jsonl", f"--init_checkpoint={bare}",
        "--layers=-1,-2,-7", "--max_seq_length=64", f"--vocab_file={root / 'vocab.txt'}", "--do_lower_case")
    roberta = roberta_directory(root / "roberta", 514)  # 514 positions, pad id 1 (as roberta-base)
    add("wrong_kind", _lines(), "--output_file={tmp}/out.jsonl", f"--init_checkpoint={roberta}", "--layers=-1",
        f"--vocab_file={root / 'vocab.txt'}")
    for seq_length in (512, 513, 514):
        add(f"roberta{seq_length}", "abc def\n", "--output_file={tmp}/out.jsonl", f"--init_checkpoint={roberta}",
            "--layers=-1", f"--max_seq_length={seq_length}")
    results = run_forked(list(commands.values()), root)
    return {name: (result, directories[name]) for name, result in zip(commands, results)}


@pytest.fixture(scope="module")
def extractor(minilm_dir):
    from official_bert.pipelines.feature_extractor import FeatureExtractor

    return FeatureExtractor.from_pretrained(str(minilm_dir), layers=list(range(7)), seq_length=128, batch_size=8)


def _direct(extractor, text, text_b):
    """[embeddings, block 1..6] (7, seq, hidden) of one example, from the encoder called directly, and its ids."""
    from official_bert.pipelines.embedder import pack_texts

    inputs, _ = pack_texts(extractor.tokenizer, extractor._packer, [text], None if text_b is None else [text_b])
    inputs = {k: tf.constant(v) for k, v in inputs.items()}
    encoder = extractor.encoder
    outputs = encoder(inputs, training=False)
    embeddings = encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
    layers = [embeddings] + list(outputs["encoder_outputs"])
    np.testing.assert_array_equal(layers[-1].numpy(), outputs["sequence_output"].numpy())
    return np.stack([layer.numpy()[0] for layer in layers]), inputs["input_word_ids"].numpy()[0]


def test_json_lines_as_googles_equal_the_encoders_outputs(extractor, runs):
    result, directory = runs["json_lines"]
    target = directory / "features.jsonl"
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [row["linex_index"] for row in rows] == [0, 1] and all(set(row) == {"linex_index", "features"}
                                                                   for row in rows)
    vocab = extractor.tokenizer.get_vocab()
    for row, (text, text_b) in zip(rows, TEXTS):
        layers, ids = _direct(extractor, text, text_b)
        real = [vocab[i] for i in ids if i != 0]
        assert [f["token"] for f in row["features"]] == real and real[0] == "[CLS]" and real[-1] == "[SEP]"
        assert real.count("[SEP]") == (2 if text_b else 1)
        for position, feature in enumerate(row["features"]):
            assert [layer["index"] for layer in feature["layers"]] == [-1, -2, -7]
            values = np.array([layer["values"] for layer in feature["layers"]])  # (3, 384), 6 decimals
            np.testing.assert_allclose(values, layers[[6, 5, 0], position], atol=1e-5, rtol=0)


def test_npz_mean_pooled_concatenation(extractor, runs):
    result, directory = runs["npz"]
    target = directory / "features.npz"
    assert result.returncode == 0, result.stderr[-3000:]
    saved = np.load(target)
    assert saved["layers"].tolist() == [-1, -2, -3, -4] and str(saved["pooling"]) == "mean"
    assert saved["truncated"].tolist() == [False, False]
    for i, (text, text_b) in enumerate(TEXTS):
        layers, ids = _direct(extractor, text, text_b)
        real = ids != 0
        expected = np.concatenate([layers[p][real].mean(0) for p in (6, 5, 4, 3)])  # (4 * 384,)
        assert saved[f"values_{i}"].dtype == np.float32 and saved[f"values_{i}"].shape == (4 * 384,)
        np.testing.assert_allclose(saved[f"values_{i}"], expected, atol=1e-5, rtol=0)
        assert saved[f"tokens_{i}"].tolist() == ["[MEAN]"]  # as the JSON lines name the mean (it was empty)


@pytest.mark.parametrize("pooling,combine", [("cls", "sum"), ("first_subtoken", "mean"), ("none", "none")])
def test_poolings_and_combines(extractor, pooling, combine):
    from official_bert.pipelines.feature_extractor import FeatureExtractor

    chosen = FeatureExtractor(extractor.encoder, extractor.tokenizer, [-1, -4], 128, 8, pooling, combine)
    text = "The unaffable tokenizer meets Zürich's café."
    [features] = chosen.extract([text])
    layers, ids = _direct(extractor, text, None)
    picked = layers[[6, 3]]  # (2, seq, hidden)
    vocab = extractor.tokenizer.get_vocab()
    if pooling == "cls":
        assert features.tokens == ["[CLS]"]
        np.testing.assert_allclose(features.values, picked[:, 0].sum(0), atol=1e-5, rtol=0)
    elif pooling == "first_subtoken":
        pieces = [vocab[i] for i in ids if i != 0]
        words = [p for p in pieces[1:-1] if not p.startswith("##")]
        assert features.tokens == words and len(words) < len(pieces) - 2  # "unaffable" is several pieces
        keep = [i for i, p in enumerate(pieces) if 0 < i < len(pieces) - 1 and not p.startswith("##")]
        np.testing.assert_allclose(features.values, picked[:, keep].mean(0), atol=1e-5, rtol=0)
    else:
        assert features.values.shape == (len(features.tokens), 2, 384)
        np.testing.assert_allclose(features.values, picked[:, :len(features.tokens)].transpose(1, 0, 2),
                                   atol=1e-5, rtol=0)


def test_streams_a_batch_at_a_time(extractor, tmp_path):
    from official_bert.data.text_lines import read_text_lines

    path = tmp_path / "long.txt"
    path.write_text("a short line of text\n" * 1000, encoding="utf-8")
    pulled = []

    def counting(examples):
        for example in examples:
            pulled.append(example)
            yield example

    stream = extractor.extract_stream(counting(read_text_lines(str(path))))
    first = next(stream)
    assert first.tokens[0] == "[CLS]" and len(pulled) == extractor.batch_size  # one batch read, not the file
    assert sum(1 for _ in stream) == 999


def test_word_features_are_the_first_pieces(extractor):
    from official_bert.data.tagging_dataset import word_pieces

    words = [["EU", "rejects", "unaffable", "lamb"], ["Peter", "Blackburn"]]
    features = extractor.word_features(word_pieces(extractor.tokenizer, words))  # (6, 7, 384)
    layers, ids = _direct(extractor, " ".join(words[0]), None)
    vocab = extractor.tokenizer.get_vocab()
    first = [i for i, t in enumerate(ids) if t != 0 and 0 < i and not vocab[t].startswith("##")][:4]
    np.testing.assert_allclose(features[:4], layers[:, first].transpose(1, 0, 2), atol=1e-5, rtol=0)


@pytest.mark.parametrize("index", range(len(_BAD_INPUT)))
def test_bad_input_is_one_clear_line(runs, index):
    result, message = runs[f"bad{index}"][0], _BAD_INPUT[index][2]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("index", [pytest.param(i, marks=getattr(case, "marks", ()))
                                   for i, case in enumerate(_UNREADABLE)])
def test_input_that_is_not_utf8_or_an_output_that_cannot_or_may_not_be_written_is_one_line(runs, index):
    case = _UNREADABLE[index]
    content, _, message = case.values if hasattr(case, "values") else case
    result, tmp_path = runs[f"unreadable{index}"]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith("error: " + message.format(tmp=tmp_path))
    assert (tmp_path / "notes.txt").read_text() == "mine\n" and not (tmp_path / "out.jsonl").exists()
    assert (tmp_path / "notes.jsonl").read_text() == "mine\n" and (tmp_path / "input.txt").read_bytes() == content


def test_a_roberta_checkpoint_takes_its_positions_less_the_skipped_ones(runs):
    """514 positions, pad id 1 (as roberta-base): --max_seq_length=512 runs, 513 and 514 are one clear line."""
    result, directory = runs["roberta512"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((directory / "out.jsonl").read_text(encoding="utf-8"))["linex_index"] == 0
    for seq_length in (513, 514):
        result = runs[f"roberta{seq_length}"][0]
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
        assert (f"--max_seq_length={seq_length} must be between 3 and the model's max_position_embeddings=514 less "
                "RoBERTa's 2 padding positions") in result.stderr.strip().splitlines()[-1]


def test_a_directory_without_its_vocab_takes_vocab_file(runs):
    """The error names --vocab_file, which extract_features has; with it, the features equal those of MiniLM's own."""
    result, directory = runs["no_vocab"]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].endswith("minilm_no_vocab: no vocab.txt or tokenizer.json; pass "
                                                           "--vocab_file")
    result, directory = runs["vocab_file"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert (directory / "features.jsonl").read_text() == (runs["json_lines"][1] / "features.jsonl").read_text()


def test_a_vocab_file_of_another_familys_kind_is_one_line(runs):
    result, _ = runs["wrong_kind"]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].endswith(
        "vocab.txt: a WordPiece vocabulary, but a RoBERTa checkpoint's tokenizer is a byte-level BPE (vocab.json + "
        "merges.txt); pass the vocab file of its own family")
