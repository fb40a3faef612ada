"""Pre-training checks on a real corpus, through the two CLIs: continuing a real checkpoint raises held-out masked-LM
accuracy, and a tiny BERT trained from scratch drives masked-LM loss well below the corpus' unigram entropy.

Corpus: the SQuAD v1.1 dev contexts (48 Wikipedia articles; one sentence per line, a blank line after each
paragraph, each paragraph a document). The last --heldout_articles articles are held out for evaluation; the
others are the training text. `python -m tasks.create_pretraining_data` turns both into TFRecords (the held-out
ones once, dupe_factor 1, so every evaluation sees the same masks), then `python -m tasks.run_pretraining` trains
and evaluates.

- continue (issue check b): all-MiniLM-L6-v2, a `BertModel` with no pre-training heads (they start fresh), is
  evaluated on the held-out records, pre-trained further for --continue_steps on the training records, and
  evaluated again. Prints masked-LM accuracy and loss before and after.
- scratch (issue check c): a BERT-Tiny (configs/uncased_L-2_H-128_A-2.json) from random initialisation trains
  --scratch_steps on the training records. Prints its held-out masked-LM loss (nats) next to the entropy of the
  held-out masked targets' unigram distribution (nats: the lowest loss any context-free predictor reaches on them)
  and the cross-entropy of the training targets' unigram distribution on them.

    python -m benchmarks.pretraining_checks                      # both checks, full size (CPU: an hour or more)
    python -m benchmarks.pretraining_checks --check=continue --continue_steps=300
    python -m benchmarks.pretraining_checks --smoke              # a few minutes: short sequences, few steps

Each run's checkpoints and weights are deleted once its eval_results.json is read (`--keep_checkpoints` keeps
them), and a temporary work directory (no `--out`) once the figures are printed.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))


def write_corpus(squad_json, out_dir, heldout_articles):
    """Writes `train.txt` and `heldout.txt` (pre-training text format) from a SQuAD file's contexts.

    Returns: `(train path, held-out path, training article count, held-out article count)`.
    """
    from official_bert.data.sentence_corpus import split_sentences, write_documents

    with open(squad_json, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    if not 0 < heldout_articles < len(articles):
        raise ValueError(f"--heldout_articles must be in [1, {len(articles) - 1}], got {heldout_articles}")

    def documents(selected):
        return [s for a in selected for p in a["paragraphs"] if (s := split_sentences(p["context"].replace("\n", " ")))]

    os.makedirs(out_dir, exist_ok=True)
    train, heldout = os.path.join(out_dir, "train.txt"), os.path.join(out_dir, "heldout.txt")
    write_documents(train, documents(articles[:-heldout_articles]))
    write_documents(heldout, documents(articles[-heldout_articles:]))
    return train, heldout, len(articles) - heldout_articles, heldout_articles


def run(module, *flags):
    """Runs `python -m module flags...` from the repository root (output shown), printing the command first."""
    command = [sys.executable, "-m", module, *flags]
    print("\n$ " + " ".join(command), flush=True)
    subprocess.run(command, cwd=REPO_ROOT, check=True)


def make_records(text, output, vocab_file, args, dupe_factor):
    """`tasks.create_pretraining_data` on `text` into `output` (a glob with one `*`), unless already there."""
    import glob

    if glob.glob(output):
        print(f"(reusing {output})")
        return output
    run("tasks.create_pretraining_data", f"--input_file={text}", f"--output_file={output}",
        f"--vocab_file={vocab_file}", "--do_lower_case=true", f"--max_seq_length={args.max_seq_length}",
        f"--max_predictions_per_seq={args.max_predictions_per_seq}", f"--dupe_factor={dupe_factor}",
        f"--random_seed={args.seed}", "--num_output_shards=2", "--num_workers=2")
    return output


def masked_targets(pattern, args):
    """Every real masked-LM target id of the records matching `pattern` (weights > 0)."""
    from official_bert.data.pretraining_dataset import pretraining_dataset

    ids = []
    for batch in pretraining_dataset(pattern, 256, args.max_seq_length, args.max_predictions_per_seq,
                                     is_training=False):
        weights = batch["masked_lm_weights"].numpy() > 0
        ids.append(batch["masked_lm_ids"].numpy()[weights])
    return np.concatenate(ids)


def entropy(ids, vocab_size):
    """Entropy (nats) of the empirical unigram distribution of `ids` (the plug-in estimate)."""
    counts = np.bincount(ids, minlength=vocab_size).astype(np.float64)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def unigram_figures(train_ids, heldout_ids, vocab_size):
    """Unigram entropies (nats) of the training and the held-out targets, the cross-entropy on the held-out targets
    of the training targets' unigram distribution (add-one smoothed over the vocabulary: the loss of the best
    context-free predictor learnt from the training corpus), and the accuracy of always predicting the most
    frequent training target."""
    train_counts = np.bincount(train_ids, minlength=vocab_size).astype(np.float64) + 1.0
    q = train_counts / train_counts.sum()
    cross_entropy = float(-np.log(q[heldout_ids]).mean())
    majority = int(np.argmax(train_counts))
    return (entropy(train_ids, vocab_size), entropy(heldout_ids, vocab_size), cross_entropy,
            float(np.mean(heldout_ids == majority)))


def pretrain(model_dir, args, heldout, *flags, keep_weights=False):
    """`tasks.run_pretraining` with the shared flags, evaluating on `heldout`; returns its eval_results.json.

    Its checkpoints (and, unless `keep_weights`, its weights: a later run may start from them) are deleted once
    the results are read, unless --keep_checkpoints."""
    run("tasks.run_pretraining", f"--model_dir={model_dir}", f"--eval_files={heldout}",
        f"--max_seq_length={args.max_seq_length}",
        f"--max_predictions_per_seq={args.max_predictions_per_seq}", f"--train_batch_size={args.train_batch_size}",
        f"--eval_batch_size={args.eval_batch_size}", "--max_eval_steps=100000", f"--seed={args.seed}",
        f"--log_steps={args.log_steps}", f"--checkpoint_steps={args.checkpoint_steps}", "--do_eval",
        *(f"--jit_compile={str(args.jit_compile).lower()}",) * (args.jit_compile is not None),
        *(f"--mixed_precision={args.mixed_precision}",) * bool(args.mixed_precision), *flags)
    with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
        results = json.load(f)
    if not args.keep_checkpoints:
        remove_checkpoints(model_dir, model_dirs=["."], weights=[] if keep_weights else ["."])
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", choices=["both", "continue", "scratch"], default="both")
    parser.add_argument("--out", default=None, help="work directory (default: a new temporary one)")
    parser.add_argument("--heldout_articles", type=int, default=8)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--dupe_factor", type=int, default=5, help="for the training records")
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=64)
    parser.add_argument("--continue_steps", type=int, default=500)
    parser.add_argument("--continue_learning_rate", type=float, default=1e-4)
    parser.add_argument("--scratch_steps", type=int, default=3000)
    parser.add_argument("--scratch_learning_rate", type=float, default=1e-3)
    parser.add_argument("--train_eval_batches", type=int, default=100,
                        help="check (c): batches of the training records evaluated after training")
    parser.add_argument("--optimizer", choices=["adamw", "lamb"], default="adamw")
    parser.add_argument("--checkpoint_steps", type=int, default=1000)
    parser.add_argument("--log_steps", type=int, default=50)
    parser.add_argument("--jit_compile", type=lambda v: v.lower() == "true", default=None)
    parser.add_argument("--mixed_precision", choices=["float16", "bfloat16"], default=None)
    parser.add_argument("--seed", type=int, default=12345)
    add_keep_checkpoints_flag(parser)
    parser.add_argument("--smoke", action="store_true", help="a few minutes' run: sequences of 64, dupe_factor 1, "
                        "20 continue steps, 150 scratch steps, batch 16")
    args = parser.parse_args()
    if args.smoke:
        args.max_seq_length, args.max_predictions_per_seq, args.dupe_factor = 64, 10, 1
        args.continue_steps, args.scratch_steps, args.train_batch_size, args.log_steps = 20, 150, 16, 10
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    out = args.out or tempfile.mkdtemp(prefix="pretraining_checks_")
    vocab_file = os.path.join(SHARED_DATA, "bert-vocab", "bert-base-uncased-vocab.txt")
    minilm = os.path.join(SHARED_DATA, "all-MiniLM-L6-v2")
    train_txt, heldout_txt, n_train, n_heldout = write_corpus(
        os.path.join(SHARED_DATA, "squad", "v1.1", "dev-v1.1.json"), os.path.join(out, "corpus"), args.heldout_articles)
    tag = f"s{args.max_seq_length}-p{args.max_predictions_per_seq}"
    train = make_records(train_txt, os.path.join(out, "records", f"train-{tag}-d{args.dupe_factor}-*.tfrecord"),
                         vocab_file, args, args.dupe_factor)
    heldout = make_records(heldout_txt, os.path.join(out, "records", f"heldout-{tag}-*.tfrecord"), vocab_file, args, 1)
    train_ids, heldout_ids = masked_targets(train, args), masked_targets(heldout, args)
    train_entropy, heldout_entropy, unigram_ce, majority_accuracy = unigram_figures(train_ids, heldout_ids, 30522)
    lines = [f"corpus: SQuAD v1.1 dev contexts, {n_train} training articles ({len(train_ids)} masked targets in "
             f"the training records), {n_heldout} held-out articles ({len(heldout_ids)} masked targets)",
             f"recipe: max_seq_length={args.max_seq_length}, max_predictions_per_seq={args.max_predictions_per_seq}, "
             f"batch {args.train_batch_size}, {args.optimizer}"]

    if args.check in ("both", "continue"):
        before = pretrain(os.path.join(out, "minilm-before"), args, heldout, f"--init_checkpoint={minilm}",
                          "--do_train=false")
        after = pretrain(os.path.join(out, "minilm-after"), args, heldout, f"--init_checkpoint={minilm}",
                         f"--input_files={train}", f"--num_train_steps={args.continue_steps}",
                         f"--num_warmup_steps={max(1, args.continue_steps // 10)}",
                         f"--learning_rate={args.continue_learning_rate}", f"--optimizer={args.optimizer}")
        lines += [f"(b) all-MiniLM-L6-v2 continued {args.continue_steps} steps (heads fresh at the start), held-out "
                  f"masked-LM accuracy {before['masked_lm_accuracy']:.4f} -> {after['masked_lm_accuracy']:.4f}, "
                  f"loss {before['masked_lm_loss']:.3f} -> {after['masked_lm_loss']:.3f} nats; next-sentence accuracy "
                  f"{before['next_sentence_accuracy']:.4f} -> {after['next_sentence_accuracy']:.4f} "
                  f"({after['masked_lm_predictions']} predictions, {after['examples']} examples; majority-token "
                  f"accuracy {majority_accuracy:.4f})"]
    if args.check in ("both", "scratch"):
        scratch = pretrain(os.path.join(out, "scratch"), args, heldout, "--preset=uncased_L-2_H-128_A-2",
                           f"--vocab_file={vocab_file}", f"--input_files={train}",
                           f"--num_train_steps={args.scratch_steps}",
                           f"--num_warmup_steps={max(1, args.scratch_steps // 10)}",
                           f"--learning_rate={args.scratch_learning_rate}", f"--optimizer={args.optimizer}",
                           keep_weights=True)
        # The same weights on the first --train_eval_batches batches of the training records (fixed masks):
        # the corpus whose unigram entropy the check compares with.
        on_train = pretrain(os.path.join(out, "scratch-on-train"), args, train,
                            f"--init_checkpoint={os.path.join(out, 'scratch', 'pretrainer')}", "--do_train=false",
                            f"--max_eval_steps={args.train_eval_batches}")
        if not args.keep_checkpoints:
            remove_checkpoints(out, weights=["scratch"])
        lines += [f"(c) BERT-Tiny from scratch, {args.scratch_steps} steps: training-corpus masked-LM loss "
                  f"{on_train['masked_lm_loss']:.3f} nats (accuracy {on_train['masked_lm_accuracy']:.4f}, "
                  f"{on_train['masked_lm_predictions']} predictions of the training records) vs the training corpus' "
                  f"unigram entropy {train_entropy:.3f} nats: {on_train['masked_lm_loss'] - train_entropy:+.3f} nats"]
        lines += [f"    held-out masked-LM loss "
                  f"{scratch['masked_lm_loss']:.3f} nats (accuracy {scratch['masked_lm_accuracy']:.4f}; at "
                  f"initialisation ~ln(30522) = {math.log(30522):.3f}); unigram entropy of the masked targets: "
                  f"training corpus {train_entropy:.3f} nats, held-out {heldout_entropy:.3f} nats; training-unigram "
                  f"cross-entropy on the held-out targets {unigram_ce:.3f} nats; loss - training entropy = "
                  f"{scratch['masked_lm_loss'] - train_entropy:+.3f} nats; held-out loss - training-unigram "
                  f"cross-entropy = {scratch['masked_lm_loss'] - unigram_ce:+.3f} nats"]
    print("\n== pretraining checks (work dir: " + out + ")")
    print("\n".join(lines))
    if args.out is None and not args.keep_checkpoints:
        shutil.rmtree(out)  # our own temporary directory: records and model_dirs, gigabytes at full size


if __name__ == "__main__":
    main()
