"""Exports a trained model (or a bare encoder) as a TF-Serving-ready SavedModel that takes raw text.

    python -m export.saved_model --model_dir=out/sst2 --export_dir=out/export/sst2
    python -m export.saved_model --model_dir=../shared/data/all-MiniLM-L6-v2 --export_dir=out/export/minilm

--model_dir is a run directory of `tasks.run_classifier`, `tasks.run_ner`, `tasks.run_squad`,
`tasks.run_multiple_choice` or `tasks.run_pretraining` (`task.json`, `bert_config.json`, `vocab.txt`,
`model.weights.h5`), or a Hugging Face / Google checkpoint directory for an encoder-only export. Writes
`<export_dir>/<version>/` (TF Serving's
layout; --version defaults to one more than the highest numeric version there, and an existing version is
never overwritten): `saved_model.pb`, `variables/`, `assets/` (`vocab.txt`, `labels.txt`) and
`assets.extra/tf_serving_warmup_requests`. The version is written under a temporary name and renamed when
complete, so a watching server never loads a half-written one. Signatures: see `export/serving_module.py` and
docs/export.md.
"""

import errno
import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile

from absl import app, flags

from export.ops import serving_save_options
from export.quantization import quantize
from official_bert import output_files, owned_files
from official_bert.families import check_sequence_length
from official_bert.model_dir import read_json
from official_bert.tokenizer_kinds import BPE, BPE_FILES, VOCAB_FILES, tokenizer_kind

FLAGS = flags.FLAGS

DEFAULT_ENCODER_SEQ_LENGTH = 128
# What `python -m export.saved_model` with no flags exports: the model_dir of the README's first command (the demo).
DEMO_MODEL_DIR = os.path.join("out", "demo")
logger = logging.getLogger(__name__)


def _tokenizer_assets(vocab_file, config):
    """The export's tokenizer files, of the model's tokenizer kind: `vocab.txt`, RoBERTa's `vocab.json` +
    `merges.txt`, or ALBERT's `spiece.model`."""
    kind = tokenizer_kind(vocab_file, config)
    if kind == BPE:
        return {BPE_FILES[0]: vocab_file, BPE_FILES[1]: os.path.join(os.path.dirname(vocab_file), BPE_FILES[1])}
    return {VOCAB_FILES[kind]: vocab_file}


def _task_module(model_dir, max_seq_length, staging_dir, top_k=None, quantize_mode=None, jit_compile=False,
                 max_windows=None):
    """The serving module of a model_dir written by the tasks (`official_bert.model_dir`): its kind's
    `serving_module` (`official_bert.task_kinds`); `quantize_mode`: a `Model.quantize` mode applied to the loaded
    model (see QUANTIZED_PRECISIONS); `jit_compile`, `max_windows`: see `build_module`."""
    from official_bert import model_dir as model_dirs
    from official_bert.task_kinds import resolve, task_kind

    loaded = model_dirs.load_model_dir(model_dir)
    module_class = resolve(task_kind(loaded.kind).serving_module)
    if jit_compile and not module_class.compiles_requests:
        raise ValueError(f"--jit_compile: sequence classifiers and taggers (tasks.run_classifier, tasks.run_ner "
                         f"model_dirs) and encoder checkpoints only; {model_dir} is a {loaded.kind} model_dir")
    if top_k is not None and not module_class.answers_top_k:
        raise ValueError(f"--top_k: masked-LM model_dirs (tasks.run_pretraining) only; {model_dir} is a {loaded.kind} "
                         "model_dir")
    windows = {}
    if max_windows is not None:
        if not module_class.reads_windows:
            raise ValueError(f"--max_windows: SQuAD model_dirs (tasks.run_squad) only; {model_dir} is a {loaded.kind} "
                             "model_dir")
        windows = {"max_windows": max_windows}
    quantize(loaded.model, quantize_mode, word_table=module_class.quantizes_word_table)
    seq_length = max_seq_length or loaded.max_seq_length
    check_sequence_length(seq_length, loaded.config, "max_seq_length", source=model_dir)
    assets = _tokenizer_assets(loaded.vocab_file, loaded.config)
    return module_class.from_model_dir(loaded, seq_length, assets, staging_dir, top_k=top_k, jit_compile=jit_compile,
                                       **windows)


def _encoder_module(checkpoint_dir, max_seq_length, staging_dir, quantize_mode=None, jit_compile=False):
    """The module of a Hugging Face / Google encoder checkpoint directory, with its family's tokenizer;
    `jit_compile`: see `build_module`."""
    from export.encoder_module import EncoderModule
    from official_bert.checkpoints import load_encoder
    from official_bert.text.preprocessing import (find_family_vocab, resolve_casing, text_preprocessor,
                                                  write_tokenizer_files)

    encoder, config = load_encoder(checkpoint_dir)
    quantize(encoder, quantize_mode)
    vocab, lower, source = find_family_vocab(checkpoint_dir, config.model_type, config.vocab_size)
    seq_length = max_seq_length
    sentence_config = os.path.join(checkpoint_dir, "sentence_bert_config.json")
    if seq_length is None and os.path.isfile(sentence_config):  # sentence-transformers' own limit
        seq_length = read_json(sentence_config).get("max_seq_length")
    seq_length = seq_length or min(DEFAULT_ENCODER_SEQ_LENGTH, config.max_sequence_length)
    check_sequence_length(seq_length, config, "max_seq_length", source=checkpoint_dir)
    vocab_file = write_tokenizer_files(vocab, staging_dir)
    return EncoderModule(encoder, text_preprocessor(vocab_file, resolve_casing(lower, source), seq_length),
                         _tokenizer_assets(vocab_file, config), jit_compile)


# --precision -> the Keras dtype policy the served model is built under. "bfloat16" stores the weights in bfloat16
# (no per-request casts, half the size) while the layers that pin float32 (LayerNorms, the residual stream, the
# attention softmax, task heads' logits) keep it: the numerics of a mixed_bfloat16 model, served faster on CPUs
# with bf16 arithmetic (AVX512_BF16, AMX) and on GPUs.
# "int8" builds the model in float32 and then quantizes it with Keras' `Model.quantize("int8")`: every Dense and
# EinsumDense kernel (attention projections, feed-forward, pooler, task head) is stored in int8 with a float32
# scale per output unit, and each call quantizes that layer's inputs to int8 on the fly (abs-max per row) for an
# int8 matmul. The word-piece table is stored in int8 with a float32 scale per row (not in masked-LM exports, whose
# head decodes with it). What stays float32: the position and token-type tables, LayerNorms, biases, the
# attention scores and softmax, GELU, and the outputs between layers.
SERVING_PRECISIONS = {"float32": "float32", "bfloat16": "bfloat16", "int8": "float32"}
QUANTIZED_PRECISIONS = {"int8": "int8"}


def build_module(model_dir, staging_dir, max_seq_length=None, top_k=None, precision="float32", jit_compile=False,
                 max_windows=None):
    """The serving module of a model_dir, in `precision` whatever the global Keras dtype policy.

    Args:
        model_dir: a `tasks.run_*` model_dir, or a Hugging Face / Google encoder directory.
        staging_dir: a directory for the asset files written on the way (must live until the save).
        max_seq_length: the packed length; default: the task's, or for an encoder its
            `sentence_bert_config.json` limit, else 128.
        top_k: masked-LM (`tasks.run_pretraining`) exports: candidates per [MASK]; default 5.
        precision: "float32", "bfloat16" or "int8" (see SERVING_PRECISIONS).
        jit_compile: sequence classifiers and taggers (their raw-text signatures) and encoder checkpoints (their
            `embed` signature): XLA-compile the model for requests without padding (`export.request_length`); TF
            Serving then needs `--xla_cpu_compilation_enabled=true`.
        max_windows: SQuAD exports: doc-stride windows of one context read at most (None: the module's default).

    Returns:
        an `export.serving_module.ServingModule`.
    """
    import keras

    if precision not in SERVING_PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(SERVING_PRECISIONS)}, got {precision!r}")
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"model_dir not found: {model_dir}")
    from official_bert.checkpoints.readers import NoCheckpointError
    from official_bert.model_dir import is_model_dir

    if not is_model_dir(model_dir) and _is_export(model_dir):
        raise ValueError(f"{model_dir} is an export (a SavedModel), not a model_dir: --model_dir takes a tasks.run_* "
                         f"model_dir or a checkpoint directory; python -m export.predict --export_dir={model_dir} asks "
                         f"the export")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(SERVING_PRECISIONS[precision])  # whatever precision the model was trained in
    try:
        quantize_mode = QUANTIZED_PRECISIONS.get(precision)
        if is_model_dir(model_dir):
            return _task_module(model_dir, max_seq_length, staging_dir, top_k, quantize_mode, jit_compile,
                                max_windows)
        for flag, value in (("top_k", top_k), ("max_windows", max_windows)):
            if value is not None:
                raise ValueError(f"--{flag}: {model_dir} is not a model_dir of the task it serves (masked-LM, SQuAD); "
                                 "an encoder export takes neither")
        try:
            return _encoder_module(model_dir, max_seq_length, staging_dir, quantize_mode, jit_compile)
        except NoCheckpointError as error:
            raise FileNotFoundError(f"not a tasks.run_* model_dir (no task.json) nor a checkpoint: {error}") from None
    finally:
        keras.config.set_dtype_policy(previous)


def _is_export(path):
    """Whether `path` is a SavedModel, or a directory of numbered SavedModel versions (an `--export_dir`)."""
    return os.path.isfile(os.path.join(path, "saved_model.pb")) or any(
        os.path.isfile(os.path.join(path, str(version), "saved_model.pb")) for version in numeric_versions(path))


def numeric_versions(export_dir):
    """The integer version subdirectories of `export_dir`, ascending."""
    if not os.path.isdir(export_dir):
        return []
    return sorted(int(name) for name in os.listdir(export_dir)
                  if name.isdigit() and os.path.isdir(os.path.join(export_dir, name)))


_STAGING_PREFIX = ".tmp-"


def _staging_name(version):
    """`.tmp-<version>-<host>-<pid>-<random>`: an export's folder until it is complete (servers ignore it)."""
    return f"{_STAGING_PREFIX}{version}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


def _process_is_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_dead_staging(export_dir):
    """Removes the staging folders of exports that were killed (their process on this host is gone), and says so.

    Returns:
        the removed folders' names.
    """
    host, removed = socket.gethostname(), []
    for name in sorted(owned_files.recorded(export_dir)):
        parts = name[len(_STAGING_PREFIX):].split("-") if name.startswith(_STAGING_PREFIX) else []
        if len(parts) < 4 or "-".join(parts[1:-2]) != host or not parts[-2].isdigit():
            continue
        path = os.path.join(export_dir, name)
        if os.path.isdir(path) and not _process_is_alive(int(parts[-2])):
            shutil.rmtree(path)
            removed.append(name)
            print(f"removed {path}, left by an export that was killed (process {parts[-2]})", file=sys.stderr)
    return removed


def save(module, export_dir, version=None):
    """Writes the module to `<export_dir>/<version>/` with its warm-up requests.

    Args:
        module: an `export.serving_module.ServingModule`.
        export_dir: the model's base directory (TF Serving's `--model_base_path`).
        version: a positive integer; default: one more than the highest existing version (1 if none).

    Returns:
        the version directory.

    Raises:
        FileExistsError: the version exists already, or another export wrote it while this one ran (this
            one's files are removed).
    """
    import tensorflow as tf

    from export.warmup import WARMUP_FILE, write_warmup_file

    owned_files.check_writable_here(export_dir, "--export_dir", allowed=str.isdigit)  # any exporter's versions
    remove_dead_staging(export_dir)
    versions = numeric_versions(export_dir)
    chosen = version is None
    version = (versions[-1] + 1 if versions else 1) if chosen else int(version)
    if version < 1:
        raise ValueError(f"version must be a positive integer, got {version}")
    target = os.path.join(export_dir, str(version))
    if os.path.exists(target):
        raise FileExistsError(f"{target} exists: versions are never overwritten; pass another --version")
    staging = owned_files.claim(export_dir, _staging_name(version))  # not numeric: servers ignore it
    os.makedirs(staging)
    try:
        logger.info("Tracing the signatures and saving them to %s", staging)
        root, signatures = module.saved_object()
        tf.saved_model.save(root, staging, signatures=signatures, options=serving_save_options())
        os.makedirs(os.path.join(staging, "assets.extra"), exist_ok=True)
        requests = module.warmup_requests()
        logger.info("Writing %d TF Serving warm-up requests", len(requests))
        write_warmup_file(os.path.join(staging, "assets.extra", WARMUP_FILE), requests)
        output_files.give_default_permissions(staging)  # a server running as another user must read it
        owned_files.claim(export_dir, str(version))
        try:
            os.rename(staging, target)  # fails if another export renamed its own version here meanwhile
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            again = "run it again to export the next version" if chosen else "pass another --version"
            raise FileExistsError(f"{target} was written by another export while this one ran (versions are never "
                                  f"overwritten); this export was discarded: {again}") from None
    except BaseException:  # a failed, interrupted or losing export leaves no half-written version behind
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        owned_files.forget(export_dir, os.path.basename(staging))
    return target


def export(model_dir, export_dir, version=None, max_seq_length=None, top_k=None, precision="float32",
           jit_compile=False, max_windows=None):
    """Builds and saves the serving module of a model_dir (arguments: `build_module`'s); returns the version
    directory."""
    owned_files.check_writable_here(export_dir, "--export_dir", allowed=str.isdigit)  # before the minutes of building
    logger.info("Loading %s (%s)", model_dir, precision)
    with tempfile.TemporaryDirectory() as staging_dir:
        module = build_module(model_dir, staging_dir, max_seq_length, top_k, precision, jit_compile, max_windows)
        return save(module, export_dir, version)


def main(argv):
    from official_bert.cli import check_command_line

    check_command_line(argv)
    model_dir = FLAGS.model_dir
    if not model_dir:
        from official_bert.model_dir import WEIGHTS_FILE

        if not os.path.isfile(os.path.join(DEMO_MODEL_DIR, WEIGHTS_FILE)):
            raise app.UsageError(f"--model_dir is required (a tasks.run_* model_dir or a checkpoint directory); "
                                 f"with no flags, the demo's {DEMO_MODEL_DIR} is exported, but it holds no trained "
                                 f"model: run `python -m tasks.run_classifier` first")
        model_dir = DEMO_MODEL_DIR
    export_dir = FLAGS.export_dir or os.path.join("out", "export", os.path.basename(os.path.normpath(model_dir)))
    path = export(model_dir, export_dir, FLAGS.version, FLAGS.max_seq_length, FLAGS.top_k, FLAGS.precision,
                  FLAGS.jit_compile, FLAGS.max_windows)
    print(f"exported {model_dir} to {path}")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    flags.DEFINE_string("model_dir", None, "A tasks.run_classifier / run_ner / run_squad / run_pretraining "
                        "model_dir, or a Hugging Face / Google encoder checkpoint directory (encoder-only export). "
                        f"Default: {DEMO_MODEL_DIR}, the demo's (python -m tasks.run_classifier).")
    flags.DEFINE_string("export_dir", None, "Base directory; the SavedModel goes to <export_dir>/<version>/. "
                        "Default: out/export/<name of --model_dir>.")
    flags.DEFINE_integer("version", None, "Version number; default: the next integer after existing ones.")
    flags.DEFINE_integer("max_seq_length", None, "Packed length; default: the task's (encoders: "
                         "sentence_bert_config.json's, else 128).")
    flags.DEFINE_integer("top_k", None, "Masked-LM exports (tasks.run_pretraining model_dirs): candidates per "
                         "[MASK]; default 5.")
    flags.DEFINE_integer("max_windows", None, "SQuAD exports (tasks.run_squad model_dirs): a long context is read in "
                         "the run's doc-stride windows, all in one batch; at most this many windows a context (the "
                         "rest is not read, and `truncated` says so). Default: 64.", lower_bound=1)
    flags.DEFINE_enum("precision", "float32", sorted(SERVING_PRECISIONS),
                      "Weights and matmuls of the served model: float32, or bfloat16 (mixed_bfloat16's numerics, "
                      "weights stored in bfloat16; for CPUs with bf16 arithmetic and GPUs), or int8 (Keras' "
                      "Model.quantize: Dense kernels in int8, inputs quantized per call; the word-piece table in "
                      "int8 with a scale per row; position embeddings, LayerNorm and softmax stay float32).")
    flags.DEFINE_bool("jit_compile", False, "Classifiers and taggers (raw-text signatures) and encoders (embed): run "
                      "requests without padding (a single text, or texts of one length) as one XLA program, their "
                      "length rounded up to 16 pieces "
                      "(about 1.4x faster single-text requests on CPU). TF Serving must then be started with "
                      "--xla_cpu_compilation_enabled=true: without it those requests fail. The warm-up requests "
                      "compile each length when the server loads the model.")
    run_main(main)
