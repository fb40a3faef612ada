"""SQuAD fine-tuning, ours vs Hugging Face transformers on PyTorch: same model, windows, recipe, scoring, machine.

    python -m benchmarks.squad_finetune                    # v1.1: 38 dev articles train, the last 10 evaluate; 3 seeds
    python -m benchmarks.squad_finetune --version=2.0      # the CS224N half of the v2.0 dev set, split alike
    python -m benchmarks.squad_finetune --max_train_examples=64 --max_eval_examples=32 --max_seq_length=128 \
        --epochs=1 --seeds=1                                # smoke run

There is no SQuAD train file here, so a dev file is split by article: v1.1 `dev-v1.1.json` (48 articles)
trains on the first 38 and evaluates on the last 10; v2.0 `cs224n-dev-half-v2.0.json` (16 articles) is cut
at the same share, the first 13 and the last 3 (`--eval_articles` changes it). Both splits are written to the
work directory as SQuAD JSON files; `--max_train_examples` / `--max_eval_examples` keep the first questions
of each, for smoke runs.

Both sides fine-tune ../shared/data/all-MiniLM-L6-v2 with AdamW (weight decay 0.01 except LayerNorm and
biases, epsilon 1e-8, global-norm clipping 1.0), 10% linear warmup then linear decay, batch 32, dropout 0.1,
the same number of steps over the same training windows: `official_bert.data.squad.build_features`
(`--max_seq_length`, doc stride 128, questions of at most 64 pieces), whose word-piece ids, type ids and
offsets are identical to `transformers.BertTokenizerFast`'s (tests/data/test_squad.py checks this on the whole
dev set), so the peer trains on the very windows ours does. Ours runs through the CLI (`python -m
tasks.run_squad`); the peer is a plain PyTorch loop over `BertForQuestionAnswering` (mean of the start and
end cross-entropies, as ours). Both answers go through the same post-processing
(`official_bert.data.squad_postprocessing.postprocess`: n-best 20, answers up to 30 pieces, null threshold
0.0) and the same official metric (`official_bert.metrics.squad.evaluate`, with the null odds for v2.0), so
the comparison isolates the training.

Both sides start from the same weights: the checkpoint's encoder and one span head drawn by transformers'
own initialisation under `--seed` (`benchmarks/start_checkpoint.py` says why), which ours loads as a Hugging
Face `BertForQuestionAnswering` checkpoint; `--no-same_start` lets each side draw its own.

Prints EM/F1 (v2.0 also HasAns/NoAns and the best-threshold F1) and the steady-state training windows/second
(first step, which compiles, left out) of both, and the ratios, per seed; then over the `--seeds` seeds (3 by
default, `benchmarks/seeds.py`) each side's mean and spread and the difference with its standard error.

A full-split run takes hours on a small CPU (v1.1: ~45 min ours, ~2.4 h the peer, on 2 cores; three seeds
about three times that; `--seeds=1` for one draw), so it resumes: run the same command with the same `--out` and
each side goes on from its last checkpoint (every 50 steps), or reuses its results if it had finished; a seed's
checkpoints are deleted once it has its `results.json`, unless `--keep_checkpoints`. `--out`
remembers the flags in `benchmark.json`; a rerun with other flags is an error naming the first that differs.
After a resume, a side's rate is that of its last run.
"""

import argparse
import json
import math
import os
import tempfile

import numpy as np

from benchmarks.finetune_flags import SHARED_DATA, add_finetune_flags, check_finetune_flags
from benchmarks.our_cli import run_our_cli
from benchmarks.pytorch_loop import train_pytorch
from benchmarks.resumable import check_same_flags, read_json, write_results
from benchmarks.seeds import over_seeds, print_over_seeds, print_seed_table
from benchmarks.start_checkpoint import describe_start, write_start_checkpoint

DATA_FILES = {"1.1": os.path.join("squad", "v1.1", "dev-v1.1.json"),
              "2.0": os.path.join("squad", "v2.0", "cs224n-dev-half-v2.0.json")}
DOC_STRIDE, MAX_QUERY_LENGTH, N_BEST_SIZE, MAX_ANSWER_LENGTH = 128, 64, 20, 30
CHECKPOINT_STEPS = 50
# What a seed's run resumes from, deleted once it has results (`over_seeds`): our model_dir's checkpoints and
# weights, the start checkpoint's weights and the peer's training state.
CHECKPOINTS = {"model_dirs": ("ours",), "weights": ("ours", "start"),
               "torch_states": (os.path.join("pytorch", "state.pt"),)}


def _first_questions(articles, limit):
    """The articles cut to their first `limit` questions (None: all), empty paragraphs and articles dropped."""
    if limit is None:
        return articles
    kept = []
    for article in articles:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            if limit <= 0:
                break
            qas = paragraph["qas"][:limit]
            limit -= len(qas)
            paragraphs.append({**paragraph, "qas": qas})
        if paragraphs:
            kept.append({**article, "paragraphs": paragraphs})
    return kept


def write_split(source, work, eval_articles, max_train, max_eval):
    """Writes train.json (the first articles) and eval.json (the last `eval_articles`); returns their paths and
    the eval articles (the metric's `dataset`)."""
    with open(source, encoding="utf-8") as f:
        squad = json.load(f)
    articles = squad["data"]
    if not 0 < eval_articles < len(articles):
        raise ValueError(f"{source}: {len(articles)} articles, cannot hold out {eval_articles}")
    os.makedirs(work, exist_ok=True)
    splits = {"train": _first_questions(articles[:-eval_articles], max_train),
              "eval": _first_questions(articles[-eval_articles:], max_eval)}
    paths = {}
    for name, data in splits.items():
        paths[name] = os.path.join(work, f"{name}.json")
        with open(paths[name], "w", encoding="utf-8") as f:
            json.dump({"version": squad.get("version", ""), "data": data}, f)
    return paths, splits["eval"]


def run_ours(paths, args, model_dir):
    if os.path.exists(os.path.join(model_dir, "eval_results.json")):
        print(f"ours: {model_dir} has finished; its results are reused", flush=True)
        train = read_json(os.path.join(model_dir, "train_results.json"))
        return (read_json(os.path.join(model_dir, "eval_results.json")), train["steady_examples_per_second"],
                train["seconds"])
    flags = [f"--train_file={paths['train']}", f"--predict_file={paths['eval']}",
             f"--init_checkpoint={args.checkpoint}",
             f"--doc_stride={DOC_STRIDE}", f"--max_query_length={MAX_QUERY_LENGTH}", f"--n_best_size={N_BEST_SIZE}",
             f"--max_answer_length={MAX_ANSWER_LENGTH}", f"--version_2_with_negative={args.version == '2.0'}"]
    return run_our_cli("tasks.run_squad", flags, model_dir, args, seq_length=args.max_seq_length,
                       checkpoint_steps=CHECKPOINT_STEPS)


def run_pytorch(paths, eval_data, args, work):
    """The peer: transformers BertForQuestionAnswering on our windows, a plain PyTorch training loop.

    Its training state goes to `<work>/pytorch/state.pt` (resumed from there) and its results to
    `<work>/pytorch/results.json` (reused when present).
    """
    results_path = os.path.join(work, "pytorch", "results.json")
    if os.path.exists(results_path):
        print(f"pytorch: {results_path} exists; its results are reused", flush=True)
        results = read_json(results_path)
        return results["metrics"], results["steady_examples_per_second"], results["seconds"]
    os.makedirs(os.path.dirname(results_path), exist_ok=True)

    import torch
    import transformers

    from official_bert.checkpoints.vocab import find_vocab
    from official_bert.data.squad import build_features
    from official_bert.data.squad_examples import read_squad_json
    from official_bert.data.squad_postprocessing import postprocess
    from official_bert.metrics.squad import evaluate
    from official_bert.text import BertTokenizer

    v2 = args.version == "2.0"
    tokens, lower, _ = find_vocab(args.checkpoint)
    tokenizer = BertTokenizer(vocab=tokens, lower_case=True if lower is None else lower)

    def windows(path, is_training):
        examples = read_squad_json(path)
        features, _ = build_features(examples, tokenizer, args.max_seq_length, DOC_STRIDE, MAX_QUERY_LENGTH,
                                     is_training=is_training)
        inputs = {"input_ids": torch.tensor(features.inputs["input_word_ids"], dtype=torch.long),
                  "attention_mask": torch.tensor(features.inputs["input_mask"], dtype=torch.long),
                  "token_type_ids": torch.tensor(features.inputs["input_type_ids"], dtype=torch.long)}
        return examples, features, inputs

    torch.manual_seed(args.seed)
    model = transformers.BertForQuestionAnswering.from_pretrained(args.checkpoint,
                                                                  attn_implementation=args.pytorch_attention)
    _, train_features, train_inputs = windows(paths["train"], True)
    labels = {"start_positions": torch.tensor(train_features.start_positions, dtype=torch.long),
              "end_positions": torch.tensor(train_features.end_positions, dtype=torch.long)}
    seconds, rate = train_pytorch(model, train_inputs, labels, len(train_features), args.epochs, args.learning_rate,
                                  args.seed, bfloat16=args.mixed_precision == "bfloat16", log_every=50,
                                  state_path=os.path.join(work, "pytorch", "state.pt"),
                                  checkpoint_every=CHECKPOINT_STEPS)

    model.eval()
    examples, features, inputs = windows(paths["eval"], False)
    start_logits, end_logits = [], []
    with torch.no_grad():
        for i in range(0, len(features), 128):
            out = model(**{k: v[i:i + 128] for k, v in inputs.items()})
            start_logits.append(out.start_logits.float().numpy())
            end_logits.append(out.end_logits.float().numpy())
    predictions = postprocess(examples, features, np.concatenate(start_logits), np.concatenate(end_logits),
                              n_best_size=N_BEST_SIZE, max_answer_length=MAX_ANSWER_LENGTH,
                              version_2_with_negative=v2)
    metrics = evaluate(eval_data, predictions.predictions, na_probs=predictions.null_odds,
                       version=args.version)
    with open(results_path, "w", encoding="utf-8") as f:
        json.dump({"metrics": metrics, "steady_examples_per_second": rate, "seconds": seconds}, f, indent=2)
    return metrics, rate, seconds


def metric_keys(version):
    return (("exact_match", "f1") if version == "1.1" else
            ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_f1"))


def run_seed(args, work):
    """One seed's run of both sides into `work` (resuming a killed one): writes `results.json`, prints its table."""
    check_same_flags(work, args, ignore=("out", "seeds"))
    source = args.data_file or os.path.join(SHARED_DATA, DATA_FILES[args.version])
    model_dir = os.path.join(work, "ours")
    with open(source, encoding="utf-8") as f:
        num_articles = len(json.load(f)["data"])
    eval_articles = args.eval_articles or max(1, math.floor(num_articles * 10 / 48 + 0.5))
    paths, eval_data = write_split(source, os.path.join(work, "data"), eval_articles, args.max_train_examples,
                                   args.max_eval_examples)

    if args.same_start:
        start = os.path.join(work, "start")
        args.checkpoint = start if os.path.isdir(start) else write_start_checkpoint(
            args.checkpoint, args.seed, start, "BertForQuestionAnswering", dropout=args.dropout)
    ours, ours_rate, ours_seconds = run_ours(paths, args, model_dir)
    theirs, their_rate, their_seconds = run_pytorch(paths, eval_data, args, work)
    write_results(work, ours, theirs, ours_rate, their_rate)

    print(f"\nSQuAD v{args.version}: all-MiniLM-L6-v2, {args.epochs:g} epoch(s), lr {args.learning_rate:g}, batch 32, "
          f"seq {args.max_seq_length}, {'bf16' if args.mixed_precision else 'fp32'}; "
          f"{num_articles - eval_articles} articles train, {eval_articles} evaluate ({theirs['total']} questions"
          f"{', train questions limited' if args.max_train_examples else ''}; "
          f"{describe_start(args)})")
    rows = [(key, ours[key], theirs[key]) for key in metric_keys(args.version) if key in ours and key in theirs]
    print_seed_table(rows, (ours_rate, their_rate), (ours_seconds, their_seconds), unit="windows", digits=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", choices=sorted(DATA_FILES), default="1.1")
    parser.add_argument("--data_file", default=None, help="default: the shared dev file of --version")
    parser.add_argument("--eval_articles", type=int, default=None,
                        help="articles held out at the end (default: 10 of 48, the same share of other files)")
    parser.add_argument("--max_seq_length", type=int, default=384)
    parser.add_argument("--max_train_examples", type=int, default=None, help="first questions of the train split")
    parser.add_argument("--max_eval_examples", type=int, default=None, help="first questions of the eval split")
    add_finetune_flags(parser, "span head", epochs=2.0, learning_rate=1e-4)
    args = parser.parse_args()
    check_finetune_flags(parser, args)

    work = args.out or tempfile.mkdtemp(prefix="squad_bench_")
    print_over_seeds(over_seeds(args, work, run_seed, resumes=True, checkpoints=CHECKPOINTS),
                     metric_keys(args.version))


if __name__ == "__main__":
    main()
