"""Writes a finished model_dir as a Hugging Face directory that transformers loads with its head.

    python -m export.hugging_face --model_dir=out/sst2 --output_dir=out/hf/sst2
    # PyTorch: transformers.AutoModelForSequenceClassification.from_pretrained("out/hf/sst2"), AutoTokenizer too

The model_dir's kind gives transformers' class (`official_bert.checkpoints.heads.hf_head`), `*` its family's
prefix (`Bert`, `Roberta`, `DistilBert`, `Albert`): a classifier is a `*ForSequenceClassification` (its labels as
`id2label`; a regression has `problem_type="regression"`, a multi-label classifier
`"multi_label_classification"`), a tagger a `*ForTokenClassification` (its tags as `id2label`), SQuAD a
`*ForQuestionAnswering`, multiple choice a `*ForMultipleChoice`, pre-training a `*ForPreTraining` or
`*ForMaskedLM` (what the model_dir's `pretrainer/` holds). The directory gets `config.json`, `model.safetensors`,
the vocab and `tokenizer_config.json` (the casing, the tokenizer class). A model_dir's `encoder/` is the encoder
alone (`AutoModel`); this is the whole task model. A time-series model_dir has no transformers class: refused.

`--output_dir` must be empty or a directory this command wrote; an export already there is replaced only with
`--overwrite`.
"""

import os

from absl import flags

from official_bert import owned_files

FLAGS = flags.FLAGS
REQUIRED_FLAGS = ("model_dir", "output_dir")
CONFIG_FILES = ("config.json", "model.safetensors", "tokenizer_config.json")


def _written_names(config):
    """The files an export writes: the model's, and the tokenizer's of its kind (RoBERTa's two BPE files)."""
    from official_bert.tokenizer_kinds import BPE, BPE_FILES, VOCAB_FILES

    kind = config.tokenizer_kind
    return CONFIG_FILES + (BPE_FILES if kind == BPE else (VOCAB_FILES[kind],))


def export_hugging_face(model_dir, output_dir, overwrite=False):
    """Writes `model_dir`'s task model as a Hugging Face directory (see the module notes).

    Args:
        model_dir: a finished model_dir of the tasks (`official_bert.model_dir.load_model_dir`).
        output_dir: the directory to write (created).
        overwrite: replace an export this command wrote there before.
    Returns: `output_dir`.
    Raises:
        ValueError: a kind transformers has no class for; `output_dir` holds files not ours, or an earlier export
            and not `overwrite`.
        FileNotFoundError: see `load_model_dir`.
    """
    from official_bert.checkpoints.task_models import hf_label_fields, save_task_model
    from official_bert.model_dir import load_model_dir, write_tokenizer_config
    from official_bert.task_kinds import task_kind

    owned_files.check_writable_here(output_dir, "--output_dir")
    loaded = load_model_dir(model_dir)
    if task_kind(loaded.kind).hf_head is None:
        raise ValueError(f"--model_dir={model_dir}: transformers has no class for a {loaded.kind} model; "
                         "python -m export.saved_model exports it for TF Serving")
    names = _written_names(loaded.config)
    existing = [name for name in names if os.path.exists(os.path.join(output_dir, name))]
    if existing and not overwrite:
        raise ValueError(f"--output_dir={output_dir} already holds an export ({', '.join(existing)}); pass "
                         "--overwrite to replace it, or name another directory")
    for name in names:
        owned_files.claim(output_dir, name)
    save_task_model(loaded.model, output_dir, loaded.vocab_file, hf_label_fields(loaded.info), overwrite=True)
    write_tokenizer_config(output_dir, loaded.lower_case, loaded.vocab_file)
    return output_dir


def main(argv):
    from official_bert.cli import check_command_line

    check_command_line(argv, required=REQUIRED_FLAGS)
    path = export_hugging_face(FLAGS.model_dir, FLAGS.output_dir, FLAGS.overwrite)
    print(f"wrote {FLAGS.model_dir} as a Hugging Face directory to {path}")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    flags.DEFINE_string("model_dir", None, "A finished model_dir of tasks.run_classifier / run_ner / run_squad / "
                        "run_multiple_choice / run_pretraining.")
    flags.DEFINE_string("output_dir", None, "The Hugging Face directory to write (empty, or an earlier export).")
    flags.DEFINE_bool("overwrite", False, "Replace an export this command wrote in --output_dir before.")
    run_main(main, required=REQUIRED_FLAGS)
