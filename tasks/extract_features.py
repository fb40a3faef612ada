"""Extracts a frozen BERT's per-layer features of raw text (the BERT paper's feature-based approach).

    python -m tasks.extract_features --input_file=input.txt --output_file=out/features.jsonl \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --layers=-1,-2,-3,-4
    python -m tasks.extract_features ... --output_file=out/features.npz --pooling=mean --combine=concat

Input: one example per line, `text` or `text_a ||| text_b`, read lazily a batch at a time (memory does not grow
with the input; progress is logged); a bad line (not UTF-8, an empty text) stops the run without leaving a partial
output, and an existing output file is refused unless --overwrite (the input file always). Layers: 0 =
embeddings, 1..L = the blocks; -1 = last block ... -(L+1) = embeddings (Google's negative numbering). Output by the
file's extension:

- `.jsonl` / `.json`: Google's `extract_features.py` format, one JSON object per line:
  `{"linex_index": i, "features": [{"token": piece, "layers": [{"index": -1, "values": [...]}, ...]}, ...]}`
  (values rounded to 6 decimals, as Google's). With --pooling=cls|mean the one feature's token is `[CLS]` /
  `[MEAN]`; with --combine the one layer's `index` is the list of indices and it carries `"combine"`.
- `.npz`: float32 `values_<i>` per example ((tokens, layers, hidden), the layer axis gone when combined, the
  token axis gone when pooled to one vector), `tokens_<i>`, and `truncated`, `layers`, `pooling`, `combine`;
  written entry by entry (`np.load` reads it lazily).
"""

import contextlib
import json
import logging
import os
import zipfile

import numpy as np
from absl import flags

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "UTF-8 text, one example per line: text, or 'text_a ||| text_b'.")
flags.DEFINE_string("output_file", None, "Where the features go: .npz (binary) or .jsonl (JSON lines, Google's); an "
                    "existing file only with --overwrite.")
flags.DEFINE_boolean("overwrite", False, "Replace an existing --output_file (never the input file).")
flags.DEFINE_string("init_checkpoint", None, "Hugging Face or Google BERT directory, a model_dir of ours, or a "
                    "Hugging Face hub id.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated layer indices: 0 = embeddings, 1..L = blocks, "
                    "-1 = last block, -(L+1) = embeddings.")
flags.DEFINE_enum("pooling", "none", ["none", "cls", "mean", "first_subtoken"],
                  "Every piece (Google's), [CLS], the mean over real pieces, or the first piece of each word.")
flags.DEFINE_enum("combine", "none", ["none", "concat", "sum", "mean"], "Combine the chosen layers into one.")
flags.DEFINE_integer("max_seq_length", 128, "Packed length; longer texts are cut (and counted).")
flags.DEFINE_integer("batch_size", 32, "Examples per encoder call.")
flags.DEFINE_string("vocab_file", None, "The checkpoint's tokenizer file, when its directory has none: WordPiece "
                    "vocab.txt, RoBERTa's vocab.json (merges.txt beside it) or tokenizer.json, ALBERT's spiece.model.")
flags.DEFINE_boolean("do_lower_case", None, "Lower-case and strip accents; default: from the checkpoint.")
REQUIRED_FLAGS = ("input_file", "output_file", "init_checkpoint")

logger = logging.getLogger("official_bert.extract_features")
MEAN_TOKEN = "[MEAN]"


def parse_layers(text):
    """`--layers` as a list of int; a ValueError naming the flag otherwise."""
    try:
        layers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--layers={text}: expected comma-separated integers, e.g. -1,-2,-3,-4") from None
    if not layers:
        raise ValueError("--layers is empty")
    return layers


class JsonLinesWriter:
    """Google's `extract_features.py` output, one JSON object per line."""

    def __init__(self, path, layers, pooling, combine):
        self.file = open(path, "w", encoding="utf-8")
        self.layers, self.pooling, self.combine = layers, pooling, combine

    def _layers(self, vectors):  # (layers, hidden), or (width,) when combined
        if self.combine != "none":
            return [{"index": self.layers, "combine": self.combine, "values": [round(float(x), 6) for x in vectors]}]
        return [{"index": index, "values": [round(float(x), 6) for x in vector]}
                for index, vector in zip(self.layers, vectors)]

    def write(self, index, example):
        if self.pooling == "mean":
            features = [{"token": MEAN_TOKEN, "layers": self._layers(example.values)}]
        elif self.pooling == "cls":
            features = [{"token": example.tokens[0], "layers": self._layers(example.values)}]
        else:
            features = [{"token": token, "layers": self._layers(vectors)}
                        for token, vectors in zip(example.tokens, example.values)]
        self.file.write(json.dumps({"linex_index": index, "features": features}) + "\n")

    def close(self, truncated):
        self.file.close()


class NpzWriter:
    """An `.npz` written entry by entry, so no example is held after it is written."""

    def __init__(self, path, layers, pooling, combine):
        self.zip = zipfile.ZipFile(path, "w", allowZip64=True)
        self.meta = {"layers": np.array(layers, np.int32), "pooling": np.array(pooling), "combine": np.array(combine)}
        self.pooling = pooling

    def _add(self, name, array):
        with self.zip.open(f"{name}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, np.asarray(array), allow_pickle=False)

    def write(self, index, example):
        self._add(f"values_{index}", example.values.astype(np.float32))
        tokens = [MEAN_TOKEN] if self.pooling == "mean" else example.tokens  # as the JSON lines name the mean
        self._add(f"tokens_{index}", np.array(tokens, dtype=str))

    def close(self, truncated):
        self._add("truncated", np.array(truncated, bool))
        for name, array in self.meta.items():
            self._add(name, array)
        self.zip.close()


def output_writer(path):
    """The writer class of an output file, by its extension: `NpzWriter` (.npz) or `JsonLinesWriter` (.jsonl, .json).

    Raises:
        ValueError: another extension, naming the flag.
    """
    extension = os.path.splitext(path)[1].lower()
    if extension == ".npz":
        return NpzWriter
    if extension in (".jsonl", ".json"):
        return JsonLinesWriter
    raise ValueError(f"--output_file={path}: unknown format '{extension}'; name the file .npz (arrays) or .jsonl "
                     f"(JSON lines, as Google's extract_features.py)")


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.data.text_lines import read_text_lines
    from official_bert.families import check_sequence_length
    from official_bert.output_files import prepare_output_file, writing
    from official_bert.pipelines.feature_extractor import FeatureExtractor, resolve_layers
    from official_bert.pipelines.loading import load_encoder_and_tokenizer

    check_command_line(argv, required=REQUIRED_FLAGS)
    layers = parse_layers(FLAGS.layers)
    examples = read_text_lines(FLAGS.input_file)
    first = next(examples, None)  # bad or empty input fails before the model loads or the output is opened
    prepare_output_file("output_file", FLAGS.output_file, FLAGS.overwrite, inputs=[("input_file", FLAGS.input_file)])
    writer_class = output_writer(FLAGS.output_file)
    encoder, tokenizer = load_encoder_and_tokenizer(FLAGS.init_checkpoint, FLAGS.do_lower_case, FLAGS.vocab_file)
    try:
        resolve_layers(layers, encoder.config.num_hidden_layers)
    except ValueError as error:
        raise ValueError(f"--layers={FLAGS.layers}: {error}") from None
    check_sequence_length(FLAGS.max_seq_length, encoder.config, "--max_seq_length")
    extractor = FeatureExtractor(encoder, tokenizer, layers, FLAGS.max_seq_length, FLAGS.batch_size, FLAGS.pooling,
                                 FLAGS.combine)

    def stream():
        if first is not None:
            yield first
        yield from examples

    with writing("output_file", FLAGS.output_file):
        writer = writer_class(FLAGS.output_file, layers, FLAGS.pooling, FLAGS.combine)
    truncated = []
    try:
        for index, example in enumerate(extractor.extract_stream(stream())):
            with writing("output_file", FLAGS.output_file):
                writer.write(index, example)
            truncated.append(example.truncated)
    except BaseException:  # a bad line further in, an interrupt: no partial output is left
        with contextlib.suppress(OSError):
            writer.close(truncated)
            os.remove(FLAGS.output_file)
        raise
    with writing("output_file", FLAGS.output_file):
        writer.close(truncated)
    if any(truncated):
        logger.warning("%d of %d examples were cut to --max_seq_length=%d", sum(truncated), len(truncated),
                       FLAGS.max_seq_length)
    logger.info("wrote the features of %d examples to %s", len(truncated), FLAGS.output_file)


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main, required=REQUIRED_FLAGS)
