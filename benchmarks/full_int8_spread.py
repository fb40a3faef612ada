"""How far full-int8 TFLite answers stray from the float model's, over many random tiny classifiers.

`tests/export/test_tflite_full_int8.py` bounds the largest |probability difference| between the full-int8 and the
float32 TFLite model of one random tiny MRPC classifier. A bound read off one model is one draw; this script draws
`--seeds` such models (the test's architecture and initializer, seeds `--first_seed`, ...), converts each to
full int8 `--conversions` times (calibrated on the first 40 MRPC dev pairs, as the test does), checks that the
conversions of one model are byte-identical (calibration is repeatable), and prints each model's largest
difference on the first 8 pairs with the mean, standard deviation and maximum over models.

    python -m benchmarks.full_int8_spread            # 20 models, 2 conversions each (~5 min on 2 cores)
"""

import argparse
import hashlib
import os
import pathlib
import shutil
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHARED_DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def _tiny_mrpc_model_dir(path, seed, vocab_file):
    """The test fixture's classifier: 2 layers, hidden 32, initializer range 0.5 (varied labels), sequence 64."""
    import keras

    from official_bert import BertConfig, BertEncoder
    from official_bert import model_dir as model_dirs
    from official_bert.models.classifier import BertClassifier

    keras.utils.set_random_seed(seed)
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.5)
    model = BertClassifier(BertEncoder(config), 2)
    path.mkdir(parents=True)
    info = {"task": "MRPC", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2,
            "max_seq_length": 64, "do_lower_case": True}
    model_dirs.write_task_info(str(path), model_dirs.CLASSIFICATION, info)
    model_dirs.write_json(str(path / model_dirs.CONFIG_FILE), config.to_dict())
    shutil.copy(vocab_file, path / model_dirs.VOCAB_FILE)
    model.save_weights(str(path / "model.weights.h5"))
    return path


def _largest_difference(full, plain, pairs):
    """Largest |probability difference| of two .tflite classifiers on `pairs` (one batch)."""
    from export import tflite

    texts, second = (np.array([pair[i] for pair in pairs], object) for i in (0, 1))
    ours = tflite.interpreter(full).get_signature_runner("serving_default")(text=texts, text_b=second)
    reference = tflite.interpreter(plain).get_signature_runner("serving_default")(text=texts, text_b=second)
    return float(np.abs(ours["probabilities"] - reference["probabilities"]).max())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="random models drawn")
    parser.add_argument("--first_seed", type=int, default=1, help="the first model's seed (the test's is 1)")
    parser.add_argument("--conversions", type=int, default=2, help="full-int8 conversions of each model")
    parser.add_argument("--mrpc_dev", default=str(SHARED_DATA / "glue" / "MRPC" / "dev.tsv"))
    parser.add_argument("--vocab_file", default=str(SHARED_DATA / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    args = parser.parse_args()
    if args.seeds < 2 or args.conversions < 1:
        parser.error("--seeds must be at least 2 (a spread) and --conversions at least 1")

    from export import tflite
    from export.saved_model import export

    rows = pathlib.Path(args.mrpc_dev).read_text(encoding="utf-8").splitlines()[1:41]
    pairs = [tuple(row.split("\t")[3:5]) for row in rows]
    work = pathlib.Path(tempfile.mkdtemp(prefix="full_int8_spread_"))
    differences = []
    try:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            model_dir = _tiny_mrpc_model_dir(work / f"seed-{seed}", seed, args.vocab_file)
            exported = export(str(model_dir), str(work / f"export-{seed}"))
            fulls = [tflite.convert(exported, "serving_default", "full_int8", pairs) for _ in range(args.conversions)]
            digests = {hashlib.sha256(model).hexdigest()[:12] for model in fulls}
            plain = tflite.convert(exported, "serving_default", "none")
            differences.append(_largest_difference(fulls[0], plain, pairs[:8]))
            print(f"seed {seed}: largest |probability difference| {differences[-1]:.4f}; {args.conversions} "
                  f"conversions, {len(digests)} distinct model(s) {sorted(digests)}", flush=True)
            shutil.rmtree(model_dir)
            shutil.rmtree(work / f"export-{seed}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    values = np.array(differences)
    print(f"{len(values)} models: mean {values.mean():.4f}, sd {values.std(ddof=1):.4f}, max {values.max():.4f}; "
          f"mean + 4 sd {values.mean() + 4 * values.std(ddof=1):.4f}")


if __name__ == "__main__":
    main()
