"""CoNLL-2003 NER fine-tuning, ours vs Hugging Face transformers on PyTorch: same model, data, recipe, machine.

    python -m benchmarks.ner_finetune                       # train on train, evaluate on test; 3 seeds
    python -m benchmarks.ner_finetune --max_train_sentences=2000 --max_eval_sentences=500 --epochs=1 --seeds=5

Both sides fine-tune ../shared/data/all-MiniLM-L6-v2 on ../shared/data/conll2003/hf-iob2 with AdamW (learning
rate, weight decay 0.01 except LayerNorm and biases, epsilon 1e-8, global-norm clipping 1.0), linear warmup
over 10% of the steps then linear decay, batch 32, sequences of up to 128 word pieces, dropout 0.1, the same
number of steps; the first word piece of each word carries its label, the others are ignored by the loss.
Each training batch is cut to its longest sentence (ours rounds up to 32 pieces under XLA only, and without XLA
trains on the real tokens alone; the peer pads to the longest, as the collator of transformers' `run_ner.py` does
by default): the loss is the same, the step cheaper. Ours
runs through the CLI (`python -m tasks.run_ner`); the peer is a plain PyTorch loop over
`BertForTokenClassification`, tokenized by `transformers`' fast tokenizer (`is_split_into_words=True`,
`word_ids()` for the alignment). Sentences of more than 126 pieces are windowed by ours and truncated by the
peer (words it cuts, or that get no piece, are predicted "O"; the number of such sentences is printed). Both
are scored with seqeval's default (conlleval) entity F1 on the test split. Both start from the same weights:
the checkpoint's encoder and one tagging head drawn by transformers under `--seed`
(`benchmarks/start_checkpoint.py`; `--no-same_start` lets each side draw its own). Prints the scores and
steady-state training examples/second (first step, which compiles, left out) for both, and the ratios, per seed
(a seed also draws the `--max_train_sentences` subset); then over the `--seeds` seeds (3 by default,
`benchmarks/seeds.py`) each side's mean and spread and the difference with its standard error.
"""

import argparse
import os
import tempfile

import numpy as np

from benchmarks.finetune_flags import SHARED_DATA, add_finetune_flags, check_finetune_flags
from benchmarks.our_cli import run_our_cli
from benchmarks.resumable import write_results
from benchmarks.pytorch_loop import train_pytorch
from benchmarks.seeds import over_seeds, print_over_seeds, print_seed_table
from benchmarks.start_checkpoint import describe_start, seed_start

METRICS = ("precision", "recall", "f1")  # test entity scores, as fractions
# The checkpoints a seed's run writes, deleted once it has results (`over_seeds`): our model_dir's checkpoints and
# weights, and the start checkpoint's weights.
CHECKPOINTS = {"model_dirs": ("ours",), "weights": ("ours", "start")}


def write_conll(examples, path, keep=None):
    """Writes (a seeded subset `keep` of) sentences in CoNLL layout: `word tag` lines, blank line between."""
    indices = range(len(examples)) if keep is None else keep
    with open(path, "w", encoding="utf-8") as f:
        for i in indices:
            f.writelines(f"{w} {t}\n" for w, t in zip(examples.words[i], examples.tags[i]))
            f.write("\n")


def write_task_dir(data_dir, out_dir, max_train, max_eval, seed):
    """Copies train (optionally a seeded subset) and test into `out_dir`; returns (train, test) examples."""
    from official_bert.data.conll import read_conll

    os.makedirs(out_dir, exist_ok=True)
    result = []
    for split, limit in (("train", max_train), ("test", max_eval)):
        examples = read_conll(os.path.join(data_dir, f"{split}.txt"))
        keep = None
        if limit and limit < len(examples):
            keep = np.sort(np.random.default_rng(seed).permutation(len(examples))[:limit])
        write_conll(examples, os.path.join(out_dir, f"{split}.txt"), keep)
        result.append(read_conll(os.path.join(out_dir, f"{split}.txt")))
    return result


def run_ours(data_dir, checkpoint, model_dir, args):
    flags = [f"--data_dir={data_dir}", f"--init_checkpoint={checkpoint}", "--eval_split=test"]
    return run_our_cli("tasks.run_ner", flags, model_dir, args)


def run_pytorch(train, test, checkpoint, args):
    """The peer: transformers BertForTokenClassification, a plain PyTorch training loop."""
    import torch
    import transformers
    from seqeval.metrics import f1_score, precision_score, recall_score

    from official_bert.data.conll import label_names

    torch.manual_seed(args.seed)
    labels = label_names(train.tags)
    label_ids = {tag: i for i, tag in enumerate(labels)}
    tokenizer = transformers.BertTokenizerFast.from_pretrained(checkpoint)
    model = transformers.BertForTokenClassification.from_pretrained(checkpoint, num_labels=len(labels),
                                                                    attn_implementation=args.pytorch_attention)

    def encode(examples, with_labels):
        features = tokenizer(examples.words, is_split_into_words=True, truncation=True, max_length=128,
                             padding="max_length", return_tensors="pt")
        first_pieces, targets = [], []
        for i, tags in enumerate(examples.tags):
            word_ids, previous, row, firsts = features.word_ids(i), None, [], {}
            for position, word in enumerate(word_ids):
                is_first = word is not None and word != previous
                row.append(label_ids[tags[word]] if is_first and with_labels else -100)
                if is_first:
                    firsts[word] = position
                previous = word
            targets.append(row)
            first_pieces.append(firsts)
        return features, torch.tensor(targets), first_pieces

    features, targets, _ = encode(train, True)
    seconds, rate = train_pytorch(model, features, targets, len(train), args.epochs, args.learning_rate, args.seed,
                                  bfloat16=args.mixed_precision == "bfloat16", log_every=50, trim_padding=True)

    model.eval()
    test_features, _, first_pieces = encode(test, False)
    predictions = []
    with torch.no_grad():
        for i in range(0, len(test), 128):
            logits = model(**{k: v[i:i + 128] for k, v in test_features.items()}).logits
            predictions.append(logits.float().argmax(-1).numpy())
    predictions = np.concatenate(predictions)
    predicted, truncated = [], 0
    for row, (words, firsts) in enumerate(zip(test.words, first_pieces)):
        truncated += len(firsts) < len(words)
        predicted.append([labels[predictions[row, firsts[w]]] if w in firsts else "O" for w in range(len(words))])
    metrics = {"precision": precision_score(test.tags, predicted), "recall": recall_score(test.tags, predicted),
               "f1": f1_score(test.tags, predicted), "truncated_sentences": truncated}
    return metrics, rate, seconds


def run_seed(args, work):
    """One seed's run of both sides into `work`: writes `results.json` and prints the seed's table."""
    task_dir = os.path.join(work, "data")
    train, test = write_task_dir(args.data_dir, task_dir, args.max_train_sentences, args.max_eval_sentences,
                                 args.seed)
    model_dir = os.path.join(work, "ours")
    if os.path.exists(model_dir):
        raise FileExistsError(f"{model_dir} exists; pass a fresh --out")
    from official_bert.data.conll import label_names

    checkpoint = seed_start(args, work, "BertForTokenClassification", num_labels=len(label_names(train.tags)))

    ours, ours_rate, ours_seconds = run_ours(task_dir, checkpoint, model_dir, args)
    theirs, their_rate, their_seconds = run_pytorch(train, test, checkpoint, args)
    write_results(work, ours, theirs, ours_rate, their_rate)

    print(f"\nCoNLL-2003 NER: all-MiniLM-L6-v2, {args.epochs:g} epoch(s), lr {args.learning_rate:g}, batch 32, "
          f"seq 128, {'bf16' if args.mixed_precision else 'fp32'}, train sentences {len(train)}, "
          f"test sentences {len(test)} (peer lost words in {theirs['truncated_sentences']}); "
          f"{describe_start(args)}")
    print_seed_table([("test entity " + key, ours[key], theirs[key]) for key in METRICS], (ours_rate, their_rate),
                     (ours_seconds, their_seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=os.path.join(SHARED_DATA, "conll2003", "hf-iob2"))
    parser.add_argument("--max_train_sentences", type=int, default=None, help="seeded subset of train")
    parser.add_argument("--max_eval_sentences", type=int, default=None, help="seeded subset of test")
    add_finetune_flags(parser, "tagging head", epochs=3.0, learning_rate=5e-5)
    args = parser.parse_args()
    check_finetune_flags(parser, args)

    work = args.out or tempfile.mkdtemp(prefix="ner_bench_")
    print_over_seeds(over_seeds(args, work, run_seed, checkpoints=CHECKPOINTS), METRICS, scale=100.0)


if __name__ == "__main__":
    main()
