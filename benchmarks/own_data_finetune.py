"""Your own data, multi-label, ours vs Hugging Face transformers on PyTorch: same model, data, recipe and machine.

    python -m benchmarks.own_data_finetune --out=/tmp/own_data     # 3 seeds: 42, 43, 44; a killed run goes on
    python -m benchmarks.own_data_finetune --max_train_examples=2000 --epochs=1 --seeds=1

The data is no one's here: CoNLL-2003 (`../shared/data/conll2003/hf-iob2`) recast as a multi-label sentence task,
"which entity types does this sentence name" (any of LOC, MISC, ORG, PER, or none), written as JSON lines
(`{"text": ..., "label": [...]}`) from `train.txt` (14,041 sentences) and `valid.txt` (3,250). Ours runs the user's
path, `python -m tasks.run_classifier --train_file=train.jsonl --eval_file=dev.jsonl --multi_label`; the peer is
`BertForSequenceClassification` with `problem_type="multi_label_classification"` (sigmoid, binary cross-entropy
averaged over labels and examples, as ours), labels in the same (sorted) order, trained by the plain PyTorch loop
of the GLUE benchmark (`benchmarks/pytorch_loop.py`: AdamW, 10% warmup then linear decay, clipping 1.0, batch 32,
each batch cut to its longest sentence, dropout 0.1). Both start from one head drawn by transformers under the
seed (`benchmarks/start_checkpoint.py`). Dev micro and macro F1 at the threshold 0.5: ours from its
`eval_results.json`, the peer's from scikit-learn's `f1_score`. Each seed's run is kept in `<out>/seed-<seed>` until
its `results.json` is written; a rerun with the same `--out` skips the finished seeds.
"""

import argparse
import json
import os
import tempfile

import numpy as np

from benchmarks.finetune_flags import SHARED_DATA, add_finetune_flags, check_finetune_flags
from benchmarks.our_cli import run_our_cli
from benchmarks.pytorch_loop import train_pytorch
from benchmarks.resumable import check_same_flags, write_results
from benchmarks.seeds import over_seeds, print_over_seeds, print_seed_table
from benchmarks.start_checkpoint import describe_start, seed_start

CHECKPOINTS = {"model_dirs": ("ours",), "weights": ("ours", "start")}
METRICS = ("micro_f1", "macro_f1")


def entity_types(tags):
    """The entity types an IOB2 tag sequence names, sorted: ["B-PER", "I-PER", "O", "B-LOC"] -> ["LOC", "PER"]."""
    return sorted({tag[2:] for tag in tags if tag != "O"})


def write_task_files(data_dir, out_dir, max_train_examples, seed):
    """Writes `train.jsonl` (optionally a seeded subset) and `dev.jsonl` into `out_dir`.

    Returns: {"train": path, "dev": path}, and each split's (texts, label lists).
    """
    from official_bert.data.conll import read_conll

    os.makedirs(out_dir, exist_ok=True)
    paths, splits = {}, {}
    for split, source in (("train", "train.txt"), ("dev", "valid.txt")):
        examples = read_conll(os.path.join(data_dir, source))
        rows = [(" ".join(words), entity_types(tags)) for words, tags in zip(examples.words, examples.tags)]
        if split == "train" and max_train_examples and max_train_examples < len(rows):
            keep = np.sort(np.random.default_rng(seed).permutation(len(rows))[:max_train_examples])
            rows = [rows[i] for i in keep]
        paths[split] = os.path.join(out_dir, f"{split}.jsonl")
        with open(paths[split], "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": text, "label": labels}) + "\n" for text, labels in rows)
        splits[split] = ([text for text, _ in rows], [labels for _, labels in rows])
    return paths, splits


def multi_hot(label_lists, names):
    """(n, len(names)) float32 rows of 0/1."""
    index = {name: i for i, name in enumerate(names)}
    rows = np.zeros((len(label_lists), len(names)), np.float32)
    for row, labels in enumerate(label_lists):
        rows[row, [index[label] for label in labels]] = 1.0
    return rows


def run_pytorch(splits, names, checkpoint, args):
    """The peer: transformers BertForSequenceClassification (multi-label), a plain PyTorch training loop."""
    import torch
    import transformers
    from sklearn.metrics import f1_score

    torch.manual_seed(args.seed)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    model = transformers.BertForSequenceClassification.from_pretrained(
        checkpoint, num_labels=len(names), problem_type="multi_label_classification",
        attn_implementation=args.pytorch_attention)

    def encode(texts):
        return tokenizer(texts, truncation=True, max_length=128, padding="max_length", return_tensors="pt")

    train_texts, train_labels = splits["train"]
    # A dict of labels: the loop passes them whole (a 2-D tensor would be cut to the batch's length like tags).
    labels = {"labels": torch.tensor(multi_hot(train_labels, names))}
    seconds, rate = train_pytorch(model, encode(train_texts), labels, len(train_texts), args.epochs,
                                  args.learning_rate, args.seed, bfloat16=args.mixed_precision == "bfloat16",
                                  log_every=50, trim_padding=True)
    model.eval()
    dev_texts, dev_labels = splits["dev"]
    features, logits = encode(dev_texts), []
    with torch.no_grad():
        for i in range(0, len(dev_texts), 128):
            logits.append(model(**{k: v[i:i + 128] for k, v in features.items()}).logits.float().numpy())
    predicted = 1.0 / (1.0 + np.exp(-np.concatenate(logits))) > 0.5  # (n, labels)
    truth = multi_hot(dev_labels, names).astype(bool)
    metrics = {"micro_f1": float(f1_score(truth, predicted, average="micro")),
               "macro_f1": float(f1_score(truth, predicted, average="macro"))}
    return metrics, rate, seconds


def run_seed(args, work):
    """One seed's run of both sides into `work`: writes `results.json` and prints the seed's table."""
    paths, splits = write_task_files(args.data_dir, os.path.join(work, "data"), args.max_train_examples, args.seed)
    names = sorted({label for labels in splits["train"][1] for label in labels})  # as ours orders them (checked below)
    model_dir = os.path.join(work, "ours")
    if os.path.exists(model_dir):
        raise FileExistsError(f"{model_dir} exists; pass a fresh --out")
    checkpoint = seed_start(args, work, "BertForSequenceClassification", num_labels=len(names))

    flags = [f"--train_file={paths['train']}", f"--eval_file={paths['dev']}", "--multi_label",
             f"--init_checkpoint={checkpoint}"]
    ours, ours_rate, ours_seconds = run_our_cli("tasks.run_classifier", flags, model_dir, args)
    with open(os.path.join(model_dir, "task.json"), encoding="utf-8") as f:
        their_names = json.load(f)["label_names"]
    if their_names != names:
        raise ValueError(f"ours ordered the labels {their_names}, the peer {names}: the shared head would differ")
    theirs, their_rate, their_seconds = run_pytorch(splits, names, checkpoint, args)
    write_results(work, ours, theirs, ours_rate, their_rate)

    print(f"\nCoNLL-2003 entity types, multi-label ({', '.join(names)}): all-MiniLM-L6-v2, {args.epochs:g} epoch(s), "
          f"lr {args.learning_rate:g}, batch 32, seq 128, {'bf16' if args.mixed_precision else 'fp32'}, "
          f"train sentences {len(splits['train'][0])}, dev sentences {len(splits['dev'][0])}; {describe_start(args)}")
    print_seed_table([("dev " + key, ours[key], theirs[key]) for key in METRICS], (ours_rate, their_rate),
                     (ours_seconds, their_seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=os.path.join(SHARED_DATA, "conll2003", "hf-iob2"))
    parser.add_argument("--max_train_examples", type=int, default=None, help="seeded subset of train")
    add_finetune_flags(parser, "classification head", epochs=2.0, learning_rate=5e-5)
    args = parser.parse_args()
    check_finetune_flags(parser, args)

    work = args.out or tempfile.mkdtemp(prefix="own_data_bench_")
    check_same_flags(work, args)
    print_over_seeds(over_seeds(args, work, run_seed, checkpoints=CHECKPOINTS), METRICS, scale=100.0)


if __name__ == "__main__":
    main()
