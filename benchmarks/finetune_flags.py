"""The flags the fine-tuning benchmarks (GLUE, NER, SQuAD) share: the recipe, precision, seeds, start and --out."""

import os

from benchmarks.cleanup import add_keep_checkpoints_flag
from benchmarks.seeds import add_seed_flags, check_seed_flags
from benchmarks.start_checkpoint import add_dropout_flag, add_same_start_flag, check_dropout_flag

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))


def add_finetune_flags(parser, head, epochs, learning_rate):
    """Adds --checkpoint, --epochs, --learning_rate, --mixed_precision, --jit_compile, --pytorch_attention,
    --seed/--seeds, --same_start, --dropout, --out and --keep_checkpoints.

    Args:
        parser: an `argparse.ArgumentParser`.
        head: what the shared start draws, for --same_start's help ("span head").
        epochs, learning_rate: the benchmark's recipe defaults.
    """
    parser.add_argument("--checkpoint", default=os.path.join(SHARED_DATA, "all-MiniLM-L6-v2"))
    parser.add_argument("--epochs", type=float, default=epochs)
    parser.add_argument("--learning_rate", type=float, default=learning_rate)
    parser.add_argument("--mixed_precision", choices=["bfloat16"], default=None)
    parser.add_argument("--jit_compile", type=lambda v: v.lower() == "true", default=None,
                        help="ours: true/false; default: the library's default for this device")
    parser.add_argument("--pytorch_attention", choices=("sdpa", "eager"), default="sdpa",
                        help="the peer's attention: transformers' default (sdpa) or its eager einsums (issue 27's "
                             "seed spreads used eager)")
    add_seed_flags(parser)
    add_same_start_flag(parser, head)
    add_dropout_flag(parser)
    parser.add_argument("--out", default=None, help="work directory (default: a temporary one)")
    add_keep_checkpoints_flag(parser)


def check_finetune_flags(parser, args):
    """Usage errors of `add_finetune_flags`' flags (parser.error exits)."""
    check_dropout_flag(parser, args)
    check_seed_flags(parser, args)
