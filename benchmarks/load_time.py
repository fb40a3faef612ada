"""How long loading takes: a Hugging Face encoder checkpoint and a fine-tuned classifier's model_dir, ours against
transformers' `from_pretrained` of the same weights, in one process, alternating.

    python -m benchmarks.load_time                  # BERT-base shapes (12 x 768, 30,522 pieces), 5 loads each
    python -m benchmarks.load_time --layers=2 --repeats=3

A randomly initialised model of BERT-base's shapes is written once, by transformers, as a `BertModel` directory and
a `BertForSequenceClassification` one (2 labels), and as our classifier model_dir holding the same weights; all
in a temporary directory that is deleted at the end. Each repeat times ours then transformers' on each (after one
untimed load of each, which pays the first-call costs). Ours builds the model without drawing the weights it then
loads (`layers.initializers.weights_loaded_after_build`); transformers builds on the meta device and fills it.
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA",
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))
VOCAB = os.path.join(SHARED_DATA, "bert-vocab", "bert-base-uncased-vocab.txt")


def write_checkpoints(root, layers):
    """Writes `root`/encoder (BertModel), `root`/classifier (BertForSequenceClassification) and `root`/model_dir (our
    classifier model_dir with the classifier's weights); returns the three paths."""
    import torch
    import transformers

    from official_bert.checkpoints import load_task_weights
    from official_bert.checkpoints.heads import head_specs
    from official_bert.config import BertConfig
    from official_bert.model_dir import CLASSIFICATION, build_task_model, write_json, write_task_info

    torch.manual_seed(0)
    hf_config = transformers.BertConfig(num_hidden_layers=layers, num_labels=2)
    paths = [os.path.join(root, name) for name in ("encoder", "classifier", "model_dir")]
    transformers.BertModel(hf_config).save_pretrained(paths[0])
    transformers.BertForSequenceClassification(hf_config).save_pretrained(paths[1])
    info = {"task": "MRPC", "num_classes": 2, "label_names": ["0", "1"], "max_seq_length": 128,
            "do_lower_case": True}
    config = BertConfig.from_json_file(os.path.join(paths[0], "config.json"))
    model = build_task_model(CLASSIFICATION, config, info)
    assert load_task_weights(model.encoder, head_specs(model), paths[1])
    os.makedirs(paths[2])
    model.save_weights(os.path.join(paths[2], "model.weights.h5"))
    write_task_info(paths[2], CLASSIFICATION, info)
    write_json(os.path.join(paths[2], "bert_config.json"), config.to_dict())
    shutil.copy(VOCAB, os.path.join(paths[2], "vocab.txt"))
    return paths


def timed(load):
    start = time.perf_counter()
    load()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12, help="transformer layers (BERT-base: 12)")
    parser.add_argument("--repeats", type=int, default=5, help="timed loads of each, alternating")
    args = parser.parse_args()

    import transformers

    from official_bert.checkpoints import load_encoder
    from official_bert.model_dir import load_model_dir

    transformers.utils.logging.disable_progress_bar()

    root = tempfile.mkdtemp(prefix="load_time_")
    try:
        encoder_dir, classifier_dir, model_dir = write_checkpoints(root, args.layers)
        pairs = {
            "encoder checkpoint": (lambda: load_encoder(encoder_dir),
                                   lambda: transformers.BertModel.from_pretrained(encoder_dir)),
            "classifier": (lambda: load_model_dir(model_dir),
                           lambda: transformers.BertForSequenceClassification.from_pretrained(classifier_dir)),
        }
        times = {name: ([], []) for name in pairs}
        for _ in range(args.repeats + 1):  # the first round untimed
            for name, (ours, theirs) in pairs.items():
                times[name][0].append(timed(ours))
                times[name][1].append(timed(theirs))
        print(f"{args.layers} layers, hidden 768, {args.repeats} loads each (median, min-max, seconds)")
        print(f"{'what':20s}{'ours':>22s}{'transformers':>22s}{'ours / theirs':>16s}")
        for name, (ours, theirs) in times.items():
            ours, theirs = ours[1:], theirs[1:]
            print(f"{name:20s}{_spread(ours):>22s}{_spread(theirs):>22s}"
                  f"{statistics.median(ours) / statistics.median(theirs):>15.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _spread(times):
    return f"{statistics.median(times):.2f} ({np.min(times):.2f}-{np.max(times):.2f})"


if __name__ == "__main__":
    main()
