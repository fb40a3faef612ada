"""The weights both sides of a fine-tuning benchmark start from: the encoder checkpoint plus one task head drawn
by transformers' own initialisation under a seed, saved as a Hugging Face directory that ours loads too.

At the budgets these benchmarks run (a few hundred steps), the score depends strongly on the head's random draw:
on 2,000 SQuAD training questions, one Keras-drawn span head gave ours F1 17.5 and the peer's head gave ours 35.2
on the same batches (issue 4). Drawing the head once keeps that lottery out of the comparison.
"""

import argparse
import os
import shutil

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def write_start_checkpoint(checkpoint, seed, directory, model_class, dropout=None, **model_kwargs):
    """Writes `model_class` loaded from `checkpoint` (a missing head drawn under `torch.manual_seed(seed)`).

    Args:
        checkpoint: a Hugging Face encoder directory (a head it already has is kept).
        seed: the torch seed the head is drawn under.
        directory: where `config.json`, `model.safetensors` and the tokenizer files go; written whole or not at
            all (a temporary directory renamed when complete), so a resumed benchmark can trust it.
        model_class: a transformers class name, e.g. "BertForQuestionAnswering".
        dropout: if given, the hidden and attention dropout rates written into its `config.json`, which both
            sides read (the heads' dropout follows the hidden rate on both sides).
        **model_kwargs: passed to `from_pretrained` (e.g. `num_labels`).
    Returns: `directory`.
    """
    import torch
    import transformers

    if dropout is not None:
        model_kwargs.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(seed)
    model = getattr(transformers, model_class).from_pretrained(checkpoint, attn_implementation="eager",
                                                               **model_kwargs)
    temporary = directory + ".tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    model.save_pretrained(temporary)
    for name in TOKENIZER_FILES:
        if os.path.isfile(os.path.join(checkpoint, name)):
            shutil.copy(os.path.join(checkpoint, name), temporary)
    os.replace(temporary, directory)
    return directory


def seed_start(args, work, model_class, **model_kwargs):
    """The checkpoint one seed's run starts from: with `--same_start`, `write_start_checkpoint` into `<work>/start`
    (a head drawn under `args.seed`, `args.dropout` written in); else `args.checkpoint` itself.

    Args:
        args: the benchmark's flags (`checkpoint`, `seed`, `same_start`, `dropout`).
        work: the seed's work directory.
        model_class, **model_kwargs: as `write_start_checkpoint`'s.
    """
    if not args.same_start:
        return args.checkpoint
    return write_start_checkpoint(args.checkpoint, args.seed, os.path.join(work, "start"), model_class,
                                  dropout=args.dropout, **model_kwargs)


def add_same_start_flag(parser, head):
    """Adds `--same_start` (default on; `--no-same_start` lets each side draw its own `head`)."""
    parser.add_argument("--same_start", action=argparse.BooleanOptionalAction, default=True,
                        help=f"both sides start from one seeded {head}")


def add_dropout_flag(parser):
    """Adds `--dropout` (hidden and attention rate of both sides, through the shared start's `config.json`)."""
    parser.add_argument("--dropout", type=float, default=None,
                        help="hidden and attention dropout of both sides (default: the checkpoint's, 0.1 for "
                             "all-MiniLM-L6-v2); needs --same_start")


def check_dropout_flag(parser, args):
    """`--dropout` reaches both sides only through the shared start checkpoint."""
    if args.dropout is not None and not args.same_start:
        parser.error("--dropout needs --same_start (both sides read it from the shared start's config.json)")


def describe_start(args):
    """The results header's words for `--same_start`, `--seed` and `--dropout`."""
    words = f"{'one shared start' if args.same_start else 'each side its own head draw'}, seed {args.seed}"
    return words if getattr(args, "dropout", None) is None else f"{words}, dropout {args.dropout:g}"

