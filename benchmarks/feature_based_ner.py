"""The BERT paper's feature-based CoNLL-2003 table (Section 5.3, Table 7), reproduced with all-MiniLM-L6-v2.

    python -m benchmarks.feature_based_ner --out=out/feature_ner                     # the full table
    python -m benchmarks.feature_based_ner --out=/tmp/fner --max_train_sentences=300 --max_eval_sentences=100 \
        --lstm_units=32 --epochs=1 --no-finetune                                     # a small version (CI)

1. Features: the frozen encoder's embedding output and every block's output at the first piece of each word
   (`FeatureExtractor.word_features`: sentences windowed as in fine-tuning, 128 pieces), for train, valid and
   test, cached once as float32 `.npy` (words, layers, hidden) under `<out>/features/`.
2. A `FeatureTagger` (BiLSTM, `--lstm_layers` x `--lstm_units` per direction; the paper: 2 x 768) is trained
   on each of the paper's six feature sets with Adam (`--learning_rate`, batch 32, `--epochs`) and scored on
   valid and test with conlleval entity F1 (`official_bert.metrics.tagging.entity_scores`). The paper's
   "weighted sum" is a learned softmax-weighted sum (ELMo's scalar mix); "all layers" are the 6 blocks (the
   paper's all 12), without the embeddings.
3. Fine-tuning the same model with `tasks.run_ner` (batch 32, lr 5e-5, `--finetune_epochs`), valid and test.

Each configuration's result goes to `<out>/results/<name>.json`; a rerun skips what is finished (a killed run
resumes at the configuration it was in). Once the fine-tuning's result is written, its checkpoints and weights are
deleted, unless `--keep_checkpoints`. The table prints the paper's BERT-Base dev F1 beside ours.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))
SPLITS = ("train", "valid", "test")

# name -> (positions in [embeddings, block 1..6], combine, the paper's BERT-Base dev F1 (Table 7)).
CONFIGS = {
    "embeddings": ([0], "concat", 91.0),
    "second_to_last_hidden": ([5], "concat", 95.6),
    "last_hidden": ([6], "concat", 94.9),
    "weighted_sum_last_four": ([3, 4, 5, 6], "sum", 95.9),
    "concat_last_four": ([3, 4, 5, 6], "concat", 96.1),
    "weighted_sum_all": ([1, 2, 3, 4, 5, 6], "sum", 95.5),
}
PAPER_FINETUNE_DEV_F1 = 96.4


def subset(examples, limit, seed):
    """A seeded subset of `limit` sentences (in file order), or all."""
    if not limit or limit >= len(examples):
        return examples
    keep = np.sort(np.random.default_rng(seed).permutation(len(examples))[:limit])
    examples.words = [examples.words[i] for i in keep]
    examples.tags = [examples.tags[i] for i in keep]
    examples.lines = [examples.lines[i] for i in keep]
    return examples


def read_splits(args):
    from official_bert.data.conll import conll_file_path, read_conll

    limits = {"train": args.max_train_sentences, "valid": args.max_eval_sentences, "test": args.max_eval_sentences}
    return {split: subset(read_conll(conll_file_path(args.data_dir, split)), limits[split], args.seed)
            for split in SPLITS}


def extract_features(splits, args):
    """`<out>/features/<split>.npy` (words, 7, hidden) float32 for every split; skips finished ones."""
    from official_bert.data.tagging_dataset import word_pieces
    from official_bert.pipelines.feature_extractor import FeatureExtractor

    directory = os.path.join(args.out, "features")
    os.makedirs(directory, exist_ok=True)
    extractor = None
    for split, examples in splits.items():
        path = os.path.join(directory, f"{split}.npy")
        if os.path.isfile(path):
            continue
        if extractor is None:
            extractor = FeatureExtractor.from_pretrained(args.checkpoint, layers=list(range(7)), seq_length=128,
                                                         batch_size=64)
        start = time.time()
        pieces = word_pieces(extractor.tokenizer, examples.words)
        shape = (sum(len(w) for w in examples.words), 7, extractor.encoder.config.hidden_size)
        partial = path + ".partial.npy"
        out = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32, shape=shape)
        extractor.word_features(pieces, out)
        out.flush()
        del out
        os.replace(partial, path)
        print(f"features of {split}: {len(examples)} sentences, {shape[0]} words, {time.time() - start:.0f} s",
              flush=True)


def train_config(name, splits, labels, args):
    import keras
    import tensorflow as tf

    from official_bert.data.word_feature_dataset import WordFeatures, word_feature_dataset
    from official_bert.metrics.tagging import entity_scores
    from official_bert.models.feature_tagger import FeatureTagger

    layers, combine, _ = CONFIGS[name]
    keras.utils.set_random_seed(args.seed)
    data = {split: WordFeatures(np.load(os.path.join(args.out, "features", f"{split}.npy"), mmap_mode="r"),
                                [len(w) for w in examples.words]) for split, examples in splits.items()}
    label_ids = {tag: i for i, tag in enumerate(labels)}
    train_labels = [[label_ids[t] for t in tags] for tags in splits["train"].tags]
    hidden = data["train"].features.shape[-1]
    model = FeatureTagger(len(labels), len(layers), hidden, combine, args.lstm_units, args.lstm_layers)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate, clipnorm=5.0), loss=model.default_loss(),
                  jit_compile=False)
    steps = -(-len(data["train"]) // args.batch_size)
    start = time.time()
    history = model.fit(word_feature_dataset(data["train"], train_labels, args.batch_size, layers, True, args.seed),
                        epochs=args.epochs, steps_per_epoch=steps, verbose=2)
    seconds = time.time() - start
    result = {"name": name, "layers": layers, "combine": combine, "lstm_units": args.lstm_units,
              "lstm_layers": args.lstm_layers, "epochs": args.epochs, "train_sentences": len(data["train"]),
              "train_seconds": round(seconds, 1), "final_loss": float(history.history["loss"][-1])}
    spec = {"features": tf.TensorSpec((None, None, len(layers), hidden), tf.float32),
            "word_mask": tf.TensorSpec((None, None), tf.int32)}
    predict = tf.function(lambda x: model(x, training=False), input_signature=[spec])
    for split in ("valid", "test"):
        batches = word_feature_dataset(data[split], None, 64, layers, is_training=False)
        predicted = data[split].word_predictions((predict(x).numpy() for x in batches), 64)
        scores = entity_scores(splits[split].tags, [[labels[i] for i in p] for p in predicted])
        result[f"{split}_f1"] = 100 * scores["f1"]
    if name.startswith("weighted_sum"):
        mix = model.get_layer("scalar_mix")
        result["layer_weights"] = [float(w) for w in keras.ops.convert_to_numpy(
            keras.ops.softmax(mix.layer_weights))]
    return result


def write_split_files(splits, directory):
    os.makedirs(directory, exist_ok=True)
    for split, examples in splits.items():
        with open(os.path.join(directory, f"{split}.txt"), "w", encoding="utf-8") as f:
            for words, tags in zip(examples.words, examples.tags):
                f.writelines(f"{w} {t}\n" for w, t in zip(words, tags))
                f.write("\n")


def finetune(splits, args):
    """`tasks.run_ner` on the same sentences: trained once (scored on test), then re-scored on valid."""
    path = os.path.join(args.out, "results", "finetune.json")
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    data_dir, model_dir = os.path.join(args.out, "conll"), os.path.join(args.out, "finetune")
    write_split_files(splits, data_dir)
    common = [sys.executable, "-m", "tasks.run_ner", f"--data_dir={data_dir}", f"--model_dir={model_dir}",
              "--max_seq_length=128", f"--seed={args.seed}"]
    start = time.time()
    subprocess.run(common + [f"--init_checkpoint={args.checkpoint}", "--eval_split=test", "--train_batch_size=32",
                             "--learning_rate=5e-5", f"--num_train_epochs={args.finetune_epochs}",
                             "--checkpoint_steps=100"], cwd=REPO_ROOT, check=True)
    seconds = time.time() - start
    valid_dir = os.path.join(model_dir, "valid_eval")
    subprocess.run(common + [f"--init_checkpoint={model_dir}", "--do_train=false", "--eval_split=valid",
                             f"--output_dir={valid_dir}"], cwd=REPO_ROOT, check=True)
    result = {"name": "finetune", "epochs": args.finetune_epochs, "train_seconds": round(seconds, 1)}
    for split, directory in (("test", model_dir), ("valid", valid_dir)):
        with open(os.path.join(directory, "eval_results.json")) as f:
            result[f"{split}_f1"] = 100 * json.load(f)["f1"]
    write_json(path, result)
    if not args.keep_checkpoints:
        remove_checkpoints(args.out, model_dirs=("finetune",), weights=("finetune",))
    return result


def write_json(path, values):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(values, f, indent=2)
    os.replace(path + ".tmp", path)


def print_table(results, finetuned):
    print("\nCoNLL-2003 entity F1 (conlleval), all-MiniLM-L6-v2 features vs the paper's BERT-Base (Table 7, dev)")
    print(f"{'system':<26} {'paper dev':>9} {'dev':>7} {'test':>7}")
    for name, (_, _, paper) in CONFIGS.items():
        r = results.get(name)
        dev, test = (f"{r['valid_f1']:7.2f}", f"{r['test_f1']:7.2f}") if r else ("      -", "      -")
        print(f"{name:<26} {paper:9.1f} {dev} {test}")
    dev, test = (f"{finetuned['valid_f1']:7.2f}", f"{finetuned['test_f1']:7.2f}") if finetuned else ("      -",) * 2
    print(f"{'fine-tuning (run_ner)':<26} {PAPER_FINETUNE_DEV_F1:9.1f} {dev} {test}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "out", "feature_ner"))
    parser.add_argument("--checkpoint", default=os.path.join(SHARED_DATA, "all-MiniLM-L6-v2"))
    parser.add_argument("--data_dir", default=os.path.join(SHARED_DATA, "conll2003", "hf-iob2"))
    parser.add_argument("--max_train_sentences", type=int, default=None)
    parser.add_argument("--max_eval_sentences", type=int, default=None)
    parser.add_argument("--lstm_units", type=int, default=768, help="units per direction (the paper: 768)")
    parser.add_argument("--lstm_layers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of the six")
    parser.add_argument("--finetune", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--finetune_epochs", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=42)
    add_keep_checkpoints_flag(parser)
    args = parser.parse_args()
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    from official_bert.data.conll import label_names

    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown --configs {unknown}; choose from {', '.join(CONFIGS)}")
    splits = read_splits(args)
    labels = label_names(splits["train"].tags)
    extract_features(splits, args)
    results = {}
    for name in names:
        path = os.path.join(args.out, "results", f"{name}.json")
        if os.path.isfile(path):
            with open(path) as f:
                results[name] = json.load(f)
            continue
        results[name] = train_config(name, splits, labels, args)
        write_json(path, results[name])
        print(json.dumps(results[name]), flush=True)
    finetuned = finetune(splits, args) if args.finetune else None
    print_table(results, finetuned)


if __name__ == "__main__":
    main()
