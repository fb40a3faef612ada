"""GLUE fine-tuning, ours vs Hugging Face transformers on PyTorch: same model, data, recipe and machine.

    python -m benchmarks.glue_finetune --task=MRPC                      # 3 seeds: 42, 43, 44
    python -m benchmarks.glue_finetune --task=SST-2 --max_train_examples=8000 --epochs=1 --seeds=1

Both sides fine-tune ../shared/data/all-MiniLM-L6-v2 with AdamW (learning rate, weight decay 0.01 except
LayerNorm and biases, epsilon 1e-8, global-norm clipping 1.0), linear warmup over 10% of the steps then
linear decay, batch 32, pairs truncated to 128 pieces (longest first), dropout 0.1, the same number of
steps. Ours runs through the CLI (`python -m tasks.run_classifier`); the peer is a plain PyTorch loop over
`BertForSequenceClassification` with transformers' defaults: SDPA attention, each training batch cut to its
longest pair (`--pytorch_attention=eager --pytorch_padding=max_length` is issue 27's seed-spread setting). Both
start from the same weights: the checkpoint's encoder and one
classification head drawn by transformers under `--seed` (`benchmarks/start_checkpoint.py`; `--no-same_start`
lets each side draw its own). Prints dev metrics and steady-state training examples/second (first step, which
compiles, left out) for both, and the ratios, per seed; then over the `--seeds` seeds (3 by default:
`benchmarks/seeds.py`) each side's mean and spread and the difference with its standard error.
"""

import argparse
import os
import tempfile

import numpy as np

from benchmarks.finetune_flags import SHARED_DATA, add_finetune_flags, check_finetune_flags
from benchmarks.our_cli import run_our_cli
from benchmarks.pytorch_loop import train_pytorch
from benchmarks.resumable import write_results
from benchmarks.seeds import over_seeds, print_over_seeds, print_seed_table
from benchmarks.start_checkpoint import describe_start, seed_start

# The checkpoints a seed's run writes, deleted once it has results (`over_seeds`): our model_dir's checkpoints and
# weights, and the start checkpoint's weights.
CHECKPOINTS = {"model_dirs": ("ours",), "weights": ("ours", "start")}


def write_task_dir(task, data_dir, out_dir, max_train_examples, seed):
    """Copies the dev split and a (seeded, optional) subset of train into `out_dir`, in GLUE TSV layout."""
    from official_bert.data.glue import glue_file_path

    os.makedirs(out_dir, exist_ok=True)
    for split in ("train", "dev"):
        with open(glue_file_path(task, data_dir, split), encoding="utf-8-sig") as f:
            lines = f.read().splitlines()
        header, rows = lines[0], [line for line in lines[1:] if line.strip()]
        if split == "train" and max_train_examples and max_train_examples < len(rows):
            keep = np.sort(np.random.default_rng(seed).permutation(len(rows))[:max_train_examples])
            rows = [rows[i] for i in keep]
        with open(os.path.join(out_dir, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("\n".join([header, *rows]) + "\n")


def run_ours(task, data_dir, checkpoint, model_dir, args):
    flags = [f"--task={task}", f"--data_dir={data_dir}", f"--init_checkpoint={checkpoint}"]
    return run_our_cli("tasks.run_classifier", flags, model_dir, args)


def run_pytorch(task, data_dir, checkpoint, args):
    """The peer: transformers BertForSequenceClassification, a plain PyTorch training loop."""
    import torch
    import transformers

    from official_bert.data.glue import get_glue_task, read_glue_tsv
    from official_bert.metrics.glue import glue_metrics

    torch.manual_seed(args.seed)
    glue_task = get_glue_task(task)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    model = transformers.BertForSequenceClassification.from_pretrained(
        checkpoint, num_labels=glue_task.num_classes, attn_implementation=args.pytorch_attention)

    def encode(examples):
        texts = (examples.text_a, examples.text_b) if examples.text_b is not None else (examples.text_a,)
        return tokenizer(*texts, truncation="longest_first", max_length=128, padding="max_length",
                         return_tensors="pt")

    train = read_glue_tsv(glue_task, os.path.join(data_dir, "train.tsv"), "train")
    dev = read_glue_tsv(glue_task, os.path.join(data_dir, "dev.tsv"), "dev")
    features, labels = encode(train), torch.tensor(train.labels)
    seconds, rate = train_pytorch(model, features, labels, len(train), args.epochs, args.learning_rate, args.seed,
                                  bfloat16=args.mixed_precision == "bfloat16", log_every=20,
                                  trim_padding=args.pytorch_padding == "longest")
    model.eval()
    dev_features, predictions = encode(dev), []
    with torch.no_grad():
        for i in range(0, len(dev), 128):
            logits = model(**{k: v[i:i + 128] for k, v in dev_features.items()}).logits
            predictions.append(logits.float().numpy())
    predictions = np.concatenate(predictions)
    predictions = predictions[:, 0] if glue_task.is_regression else predictions.argmax(-1)
    scores = glue_metrics(glue_task.metric_names, np.asarray(dev.labels), predictions)
    metrics = {k: float(v) for k, v in scores.items()}
    return metrics, rate, seconds


def run_seed(args, work):
    """One seed's run of both sides into `work`: writes `results.json` and prints the seed's table."""
    from official_bert.data.glue_tasks import get_glue_task

    glue_task = get_glue_task(args.task)
    task = glue_task.name
    data_dir = args.data_dir or os.path.join(SHARED_DATA, "glue", task)
    task_dir = os.path.join(work, "data")
    write_task_dir(task, data_dir, task_dir, args.max_train_examples, args.seed)
    model_dir = os.path.join(work, "ours")
    if os.path.exists(model_dir):
        raise FileExistsError(f"{model_dir} exists; pass a fresh --out")
    checkpoint = seed_start(args, work, "BertForSequenceClassification", num_labels=glue_task.num_classes)

    ours, ours_rate, ours_seconds = run_ours(task, task_dir, checkpoint, model_dir, args)
    theirs, their_rate, their_seconds = run_pytorch(task, task_dir, checkpoint, args)
    write_results(work, ours, theirs, ours_rate, their_rate)

    print(f"\n{task}: all-MiniLM-L6-v2, {args.epochs:g} epoch(s), lr {args.learning_rate:g}, batch 32, seq 128, "
          f"{'bf16' if args.mixed_precision else 'fp32'}, train examples: {args.max_train_examples or 'all'}; "
          f"{describe_start(args)}")
    print_seed_table([("dev " + key, ours[key], theirs[key]) for key in sorted(theirs) if not key.startswith("num_")],
                     (ours_rate, their_rate), (ours_seconds, their_seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="MRPC")
    parser.add_argument("--data_dir", default=None, help="default: ../shared/data/glue/<task>")
    parser.add_argument("--max_train_examples", type=int, default=None, help="seeded subset of train")
    parser.add_argument("--pytorch_padding", choices=("longest", "max_length"), default="longest",
                        help="the peer's training batches: each cut to its longest pair (transformers' "
                             "DataCollatorWithPadding) or all 128 pieces (run_glue.py's --pad_to_max_length; "
                             "issue 27's seed spreads)")
    add_finetune_flags(parser, "classification head", epochs=3.0, learning_rate=5e-5)
    args = parser.parse_args()
    check_finetune_flags(parser, args)

    work = args.out or tempfile.mkdtemp(prefix="glue_bench_")
    results = over_seeds(args, work, run_seed, checkpoints=CHECKPOINTS)
    print_over_seeds(results, sorted(k for k in results[0][1]["theirs"] if not k.startswith("num_")), scale=100.0)


if __name__ == "__main__":
    main()
