"""Multiple choice (SWAG's format), ours vs Hugging Face transformers on PyTorch: same model, data, recipe, machine.

    python -m benchmarks.multiple_choice_finetune --out=out/bench/mc          # 3 seeds, resumable
    python -m benchmarks.multiple_choice_finetune --max_train=64 --max_dev=32 --seeds=1 --out=/tmp/mc_smoke

No SWAG training set is here (see ../shared/data/SOURCES.md), so the benchmark builds a set in SWAG's format from
real text, `../shared/data/squad/v1.1/dev-v1.1.json`'s paragraphs: `sent1` is a sentence, `sent2` the first three
words of the sentence after it, the right ending the rest of that next sentence, and three wrong endings the rest
(after three words) of other sentences of the same article, drawn under `--data_seed`; the right ending's position
is drawn too. It is SWAG's format on other text (Wikipedia, not video captions; the wrong endings are real
sentences of the same article, not adversarially filtered machine text); with 4 choices its chance level is 25%.
The split is by article: the first 38 of the 48 articles give the training questions, the last 10 the dev ones;
`--max_train` / `--max_dev` keep a seeded subset of each. Both files are written as SWAG JSON lines into `--out`.

Both sides fine-tune ../shared/data/all-MiniLM-L6-v2 with one recipe: the paper's SWAG recipe (batch 16 questions,
10% linear warmup then linear decay, AdamW with weight decay 0.01 except LayerNorm and biases, epsilon 1e-8,
global-norm clipping 1.0, dropout 0.1) but, by default, a learning rate of 1e-4 and 1 epoch of 1,000 questions at
sequence length 64, so that 2 sides x 3 seeds fit in about an hour of a 2-core CPU (a smoke run at the paper's
2e-5 left both sides at chance after 20 steps; a few dozen steps need a larger rate). Both train on the same
windows: each (context, choice) pair packed `[CLS] sent1 [SEP] sent2 ending [SEP]` at `--max_seq_length` by
`official_bert.data.multiple_choice_dataset.pack_choices`, whose ids the peer trains on too. Ours runs through the
CLI (`python -m tasks.run_multiple_choice`); the peer is a plain PyTorch loop (`benchmarks/pytorch_loop.py`) over
`BertForMultipleChoice`. Both start from the same weights for a seed: the encoder and one classifier head drawn by
transformers under the seed (`benchmarks/start_checkpoint.py`). Ours cuts each batch's padding to its longest pair
rounded up to 32 pieces (as all our pipelines); the peer runs the full length.

Prints, per side, dev accuracy per seed, their mean and spread (max - min), steady training questions/second (the
first step, which compiles, left out; each question is 4 sequences) and the ratios. Every finished side/seed is kept
in `--out` (`ours_seed<k>/`, `pytorch_seed<k>/results.json`) and reused by a rerun with the same flags; an
unfinished one resumes from its last checkpoint. Once both sides of a seed have their results, its checkpoints
(ours, the peer's training state, the seed's start weights) are deleted, unless `--keep_checkpoints`.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

import numpy as np

from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints
from benchmarks.pytorch_loop import train_pytorch
from benchmarks.resumable import check_same_flags, read_json
from benchmarks.start_checkpoint import write_start_checkpoint

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))
SQUAD_DEV = os.path.join("squad", "v1.1", "dev-v1.1.json")
NUM_CHOICES, START_WORDS, MIN_ENDING_WORDS = 4, 3, 3
BATCH_SIZE, CHECKPOINT_STEPS = 16, 50
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def sentences(text):
    """A paragraph's sentences: split after . ! ? followed by space and a capital, digit or quote."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def build_questions(articles, rng):
    """SWAG rows from articles (lists of paragraphs): one per pair of neighbouring sentences whose second has at
    least START_WORDS + MIN_ENDING_WORDS words; the three wrong endings are tails of other sentences of the article."""
    questions = []
    for paragraphs in articles:
        split = [sentences(p) for p in paragraphs]
        tails = [" ".join(s.split()[START_WORDS:]) for para in split for s in para
                 if len(s.split()) >= START_WORDS + MIN_ENDING_WORDS]
        for para in split:
            for first, second in zip(para, para[1:]):
                words = second.split()
                if len(words) < START_WORDS + MIN_ENDING_WORDS or len(first.split()) < 4:
                    continue
                right = " ".join(words[START_WORDS:])
                others = sorted({t for t in tails if t != right and t not in first})
                if len(others) < NUM_CHOICES - 1:
                    continue
                wrong = [others[i] for i in rng.choice(len(others), NUM_CHOICES - 1, replace=False)]
                label = int(rng.integers(NUM_CHOICES))
                endings = wrong[:label] + [right] + wrong[label:]
                questions.append({"sent1": first, "sent2": " ".join(words[:START_WORDS]),
                                  **{f"ending{i}": e for i, e in enumerate(endings)}, "label": label})
    return questions


def write_data(work, eval_articles, max_train, max_dev, data_seed):
    """Writes train.jsonl and dev.jsonl (split by article, seeded subsets); returns their paths and sizes."""
    with open(os.path.join(SHARED_DATA, SQUAD_DEV), encoding="utf-8") as f:
        articles = [[p["context"] for p in a["paragraphs"]] for a in json.load(f)["data"]]
    rng = np.random.default_rng(data_seed)
    splits = {"train": build_questions(articles[:-eval_articles], rng),
              "dev": build_questions(articles[-eval_articles:], rng)}
    paths, sizes = {}, {}
    for name, limit in (("train", max_train), ("dev", max_dev)):
        rows = splits[name]
        sizes[f"{name}_available"] = len(rows)
        if limit and limit < len(rows):
            rows = [rows[i] for i in np.sort(rng.permutation(len(rows))[:limit])]
        sizes[name] = len(rows)
        paths[name] = os.path.join(work, "data", f"{name}.jsonl")
        os.makedirs(os.path.dirname(paths[name]), exist_ok=True)
        with open(paths[name], "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    sizes["train_articles"], sizes["dev_articles"] = len(articles) - eval_articles, eval_articles
    return paths, sizes


def run_ours(paths, checkpoint, model_dir, args, seed):
    """Our CLI with the recipe; returns (dev accuracy, steady questions/s, train seconds)."""
    if not os.path.exists(os.path.join(model_dir, "eval_results.json")):
        command = [sys.executable, "-m", "tasks.run_multiple_choice", f"--train_file={paths['train']}",
                   f"--eval_file={paths['dev']}", f"--init_checkpoint={checkpoint}", f"--model_dir={model_dir}",
                   f"--max_seq_length={args.max_seq_length}", f"--train_batch_size={BATCH_SIZE}",
                   f"--learning_rate={args.learning_rate}", f"--num_train_epochs={args.epochs}",
                   "--warmup_proportion=0.1", "--weight_decay=0.01", "--adam_epsilon=1e-8", f"--seed={seed}",
                   f"--checkpoint_steps={CHECKPOINT_STEPS}"]
        print("ours:", " ".join(command), flush=True)
        subprocess.run(command, cwd=REPO_ROOT, check=True)
    else:
        print(f"ours: {model_dir} has finished; its results are reused", flush=True)
    train = read_json(os.path.join(model_dir, "train_results.json"))
    return (read_json(os.path.join(model_dir, "eval_results.json"))["accuracy"], train["steady_examples_per_second"],
            train["seconds"])


def packed(path, checkpoint, seq_length):
    """(torch inputs of shape (questions, 4, seq), labels) packed by our `pack_choices`, the windows ours trains on."""
    import tensorflow as tf
    import torch

    from official_bert.checkpoints.vocab import find_vocab, write_vocab_file
    from official_bert.data.multiple_choice import read_multiple_choice
    from official_bert.data.multiple_choice_dataset import pack_choices, padded_choices
    from official_bert.text import text_preprocessor

    tokens, lower, _ = find_vocab(checkpoint)
    vocab_file = os.path.join(os.path.dirname(path), "vocab.txt")
    write_vocab_file(tokens, vocab_file)
    preprocessor = text_preprocessor(vocab_file, True if lower is None else lower, seq_length)
    examples = read_multiple_choice(path)
    inputs, _ = pack_choices(preprocessor, tf.constant(examples.contexts),
                             tf.constant(padded_choices(examples.choices)))
    names = (("input_ids", "input_word_ids"), ("attention_mask", "input_mask"), ("token_type_ids", "input_type_ids"))
    return ({theirs: torch.tensor(inputs[ours].numpy(), dtype=torch.long) for theirs, ours in names},
            torch.tensor(examples.labels, dtype=torch.long))


def run_pytorch(paths, checkpoint, work, args, seed):
    """The peer: BertForMultipleChoice in a plain PyTorch loop; returns (dev accuracy, questions/s, seconds)."""
    results_path = os.path.join(work, "results.json")
    if os.path.exists(results_path):
        print(f"pytorch: {results_path} exists; its results are reused", flush=True)
    else:
        import torch
        import transformers

        os.makedirs(work, exist_ok=True)
        torch.manual_seed(seed)
        model = transformers.BertForMultipleChoice.from_pretrained(checkpoint, attn_implementation="eager")
        features, labels = packed(paths["train"], checkpoint, args.max_seq_length)
        seconds, rate = train_pytorch(model, features, labels, len(labels), args.epochs, args.learning_rate, seed,
                                      batch_size=BATCH_SIZE, log_every=20, state_path=os.path.join(work, "state.pt"),
                                      checkpoint_every=CHECKPOINT_STEPS)
        model.eval()
        dev_features, dev_labels = packed(paths["dev"], checkpoint, args.max_seq_length)
        predictions = []
        with torch.no_grad():
            for i in range(0, len(dev_labels), 64):
                predictions.append(model(**{k: v[i:i + 64] for k, v in dev_features.items()}).logits.argmax(-1))
        accuracy = float((torch.cat(predictions) == dev_labels).float().mean())
        with open(results_path, "w", encoding="utf-8") as f:
            json.dump({"accuracy": accuracy, "steady_examples_per_second": rate, "seconds": seconds}, f, indent=2)
    results = read_json(results_path)
    return results["accuracy"], results["steady_examples_per_second"], results["seconds"]


def _summary(values):
    return statistics.mean(values), (max(values) - min(values)) if len(values) > 1 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=os.path.join(SHARED_DATA, "all-MiniLM-L6-v2"))
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--learning_rate", type=float, default=1e-4,
                        help="the paper's is 2e-5; a larger rate for this CPU budget's ~60 steps")
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--max_train", type=int, default=1000, help="seeded subset of the training questions")
    parser.add_argument("--max_dev", type=int, default=500, help="seeded subset of the dev questions")
    parser.add_argument("--eval_articles", type=int, default=10, help="SQuAD dev articles held out for dev")
    parser.add_argument("--data_seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=3, help="training seeds 42, 43, ...")
    parser.add_argument("--sides", default="ours,pytorch")
    parser.add_argument("--out", required=True, help="work directory; a rerun with the same flags resumes there")
    add_keep_checkpoints_flag(parser)
    args = parser.parse_args()

    work = os.path.abspath(args.out)
    check_same_flags(work, args, ignore=("out", "seeds"))
    paths, sizes = write_data(work, args.eval_articles, args.max_train, args.max_dev, args.data_seed)
    print(f"data: {sizes}", flush=True)
    sides = args.sides.split(",")
    results = {side: [] for side in sides}
    for seed in range(42, 42 + args.seeds):
        start = os.path.join(work, f"start_seed{seed}")
        checkpoint = start if os.path.isdir(start) else write_start_checkpoint(args.checkpoint, seed, start,
                                                                               "BertForMultipleChoice")
        if "ours" in sides:
            results["ours"].append(run_ours(paths, checkpoint, os.path.join(work, f"ours_seed{seed}"), args, seed))
        if "pytorch" in sides:
            results["pytorch"].append(run_pytorch(paths, checkpoint, os.path.join(work, f"pytorch_seed{seed}"), args,
                                                  seed))
        if not args.keep_checkpoints:  # both sides have their results: nothing resumes from these again
            remove_checkpoints(work, model_dirs=(f"ours_seed{seed}",),
                               weights=(f"ours_seed{seed}", f"start_seed{seed}"),
                               torch_states=(os.path.join(f"pytorch_seed{seed}", "state.pt"),))

    print(f"\nSWAG-format set from SQuAD v1.1 dev paragraphs (SWAG's format on Wikipedia text, not SWAG): "
          f"{sizes['train']} train questions of {sizes['train_available']} ({sizes['train_articles']} articles), "
          f"{sizes['dev']} dev of {sizes['dev_available']} ({sizes['dev_articles']} articles), 4 choices: chance "
          f"25%.\nall-MiniLM-L6-v2, {args.epochs:g} epoch(s), lr {args.learning_rate:g}, batch {BATCH_SIZE} "
          f"questions, seq {args.max_seq_length}, fp32, seeds {', '.join(str(42 + i) for i in range(args.seeds))} "
          f"(one shared start per seed)")
    titles = {"ours": "ours (TF/Keras)", "pytorch": "HF PyTorch"}
    print(f"{'':34s}" + "".join(f"{titles[s]:>18s}" for s in sides))
    for i in range(args.seeds):
        print(f"{f'dev accuracy, seed {42 + i}':34s}" + "".join(f"{100 * results[s][i][0]:18.2f}" for s in sides))
    accuracy = {s: _summary([100 * r[0] for r in results[s]]) for s in sides}
    rate = {s: _summary([r[1] for r in results[s]]) for s in sides}
    print(f"{'dev accuracy, mean (spread)':34s}" + "".join(f"{accuracy[s][0]:11.2f} ({accuracy[s][1]:4.2f})"
                                                             for s in sides))
    print(f"{'train questions/s, mean (spread)':34s}" + "".join(f"{rate[s][0]:11.2f} ({rate[s][1]:4.2f})"
                                                                for s in sides))
    print(f"{'train wall seconds, mean':34s}" + "".join(f"{statistics.mean(r[2] for r in results[s]):18.1f}"
                                                         for s in sides))
    if len(sides) == 2:
        print(f"ours - HF dev accuracy: {accuracy['ours'][0] - accuracy['pytorch'][0]:+.2f} points; ours / HF "
              f"questions/s: {rate['ours'][0] / rate['pytorch'][0]:.2f}x")
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"sizes": sizes, "results": results, "flags": vars(args)}, f, indent=2)


if __name__ == "__main__":
    main()
