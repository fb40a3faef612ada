"""One training step under dropout, ours vs Hugging Face transformers: the same distribution of loss and gradient?

    python -m benchmarks.dropout_gradients --draws=60

Issue 27 asks whether ours trains differently from transformers + PyTorch when dropout is on. With dropout off
the two give the same losses step for step; with it on, each step's masks are random, so the steps can only be
compared in distribution. This draws `--draws` dropout masks on each side for one fixed batch (16 CoNLL-2003
training sentences, padded to the longest) from the same weights (all-MiniLM-L6-v2 plus one token-classification
head drawn by transformers under `--seed`), and prints:

- the loss and gradients with dropout off (they must agree to float rounding: the same function);
- the mean loss under dropout on each side with its standard error;
- for a few weight tensors, the mean gradient of each side, the per-element noise (standard deviation over
  draws), the root-mean-square z of the difference of the means (about 1 when the two sides draw from the same
  distribution; clearly above 1 when they differ), and the cosine between the two mean gradients.
"""

import argparse
import os
import tempfile

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))
# Our variable path fragment -> (transformers parameter name, how ours is laid out relative to theirs).
TENSORS = {
    "classifier/kernel": ("classifier.weight", "transpose"),
    "transformer_layer_0/attention/query/kernel": ("bert.encoder.layer.0.attention.self.query.weight", "heads"),
    "transformer_layer_5/output_dense/kernel": ("bert.encoder.layer.5.output.dense.weight", "transpose"),
    "embeddings/layer_norm/gamma": ("bert.embeddings.LayerNorm.weight", "same"),
}


def _as_theirs(gradient, layout):
    """Our gradient in transformers' layout: [in, out] -> [out, in]; [in, heads, head_size] -> [out, in]."""
    if layout == "transpose":
        return gradient.T
    if layout == "heads":
        return gradient.reshape(gradient.shape[0], -1).T
    return gradient


def _batch(tokenizer, examples, label_ids, first, size):
    """`size` sentences from `first`: transformers' features and labels on each word's first piece (-100 else)."""
    import torch

    words, tags = examples.words[first:first + size], examples.tags[first:first + size]
    features = tokenizer(words, is_split_into_words=True, truncation=True, max_length=128, padding="longest",
                         return_tensors="pt")
    labels = []
    for i in range(size):
        previous, row = None, []
        for word in features.word_ids(i):
            row.append(label_ids[tags[i][word]] if word is not None and word != previous else -100)
            previous = word
        labels.append(row)
    return features, torch.tensor(labels)


def _moments(draw, count):
    """Loss values and the per-element mean and variance of each gradient over `count` calls of `draw()`."""
    losses, total, squares = [], None, None
    for _ in range(count):
        loss, gradients = draw()
        losses.append(loss)
        if total is None:
            total = {k: g.astype(np.float64) for k, g in gradients.items()}
            squares = {k: g.astype(np.float64) ** 2 for k, g in gradients.items()}
        else:
            for k, g in gradients.items():
                total[k] += g
                squares[k] += g.astype(np.float64) ** 2
    mean = {k: v / count for k, v in total.items()}
    return np.asarray(losses), mean, {k: squares[k] / count - mean[k] ** 2 for k in total}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=os.path.join(SHARED_DATA, "all-MiniLM-L6-v2"))
    parser.add_argument("--data_file", default=os.path.join(SHARED_DATA, "conll2003", "hf-iob2", "train.txt"))
    parser.add_argument("--draws", type=int, default=60, help="dropout draws on each side")
    parser.add_argument("--first_sentence", type=int, default=100)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="draws the head, then each side's masks")
    args = parser.parse_args()

    import keras
    import tensorflow as tf
    import torch
    import transformers

    from benchmarks.start_checkpoint import write_start_checkpoint
    from official_bert import BertEncoder
    from official_bert.checkpoints import head_specs, load_config, load_task_weights, open_checkpoint
    from official_bert.data.conll import label_names, read_conll
    from official_bert.models.token_classifier import BertTokenClassifier

    examples = read_conll(args.data_file)
    labels = label_names(examples.tags)
    start = write_start_checkpoint(args.checkpoint, args.seed, os.path.join(tempfile.mkdtemp(), "start"),
                                   "BertForTokenClassification", num_labels=len(labels))
    tokenizer = transformers.BertTokenizerFast.from_pretrained(start)
    features, targets = _batch(tokenizer, examples, {t: i for i, t in enumerate(labels)}, args.first_sentence,
                               args.batch_size)

    theirs = transformers.BertForTokenClassification.from_pretrained(start, attn_implementation="eager")
    parameters = dict(theirs.named_parameters())

    def their_step(training):
        theirs.train(training)
        theirs.zero_grad()
        out = theirs(**features, labels=targets)
        out.loss.backward()
        return float(out.loss), {k: parameters[name].grad.numpy().copy() for k, (name, _) in TENSORS.items()}

    ours = BertTokenClassifier(BertEncoder(load_config(open_checkpoint(start))), num_labels=len(labels))
    load_task_weights(ours.encoder, head_specs(ours), start, optional_pooler=True)
    loss_fn = ours.default_loss()
    variables = [next(v for v in ours.trainable_variables if fragment in v.path) for fragment in TENSORS]
    inputs = {"input_word_ids": tf.constant(features["input_ids"].numpy(), tf.int32),
              "input_mask": tf.constant(features["attention_mask"].numpy(), tf.int32),
              "input_type_ids": tf.constant(features["token_type_ids"].numpy(), tf.int32)}
    y = tf.constant(targets.numpy(), tf.int32)

    def step(training):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, ours(inputs, training=training))
        return loss, tape.gradient(loss, variables)

    @tf.function
    def step_with_dropout():
        return step(True)

    @tf.function
    def step_without_dropout():
        return step(False)

    compiled = {True: step_with_dropout, False: step_without_dropout}

    def our_step(training):
        loss, gradients = compiled[training]()
        return float(loss), {k: _as_theirs(tf.convert_to_tensor(g).numpy(), layout)
                             for (k, (_, layout)), g in zip(TENSORS.items(), gradients)}

    their_loss, their_gradients = their_step(False)
    our_loss, our_gradients = our_step(False)
    print(f"dropout off: loss ours {our_loss:.6f}, HF {their_loss:.6f}")
    for k in TENSORS:
        scale = np.abs(their_gradients[k]).max()
        difference = np.abs(our_gradients[k] - their_gradients[k]).max() / scale
        print(f"  {k:45s} max |gradient difference| / max |gradient| {difference:.2e}")

    torch.manual_seed(args.seed)
    keras.utils.set_random_seed(args.seed)
    their_losses, their_mean, their_var = _moments(lambda: their_step(True), args.draws)
    our_losses, our_mean, our_var = _moments(lambda: our_step(True), args.draws)
    n = args.draws
    print(f"\ndropout on, {n} draws each, batch of {args.batch_size} sentences, seed {args.seed}")
    print(f"  mean loss: ours {our_losses.mean():.5f} +- {our_losses.std(ddof=1) / np.sqrt(n):.5f}, "
          f"HF {their_losses.mean():.5f} +- {their_losses.std(ddof=1) / np.sqrt(n):.5f}")
    print(f"  {'tensor':45s}{'|mean g| ours':>14s}{'HF':>10s}{'noise ours':>12s}{'HF':>10s}{'rms z':>8s}{'cos':>8s}")
    for k in TENSORS:
        z = (our_mean[k] - their_mean[k]) / np.maximum(np.sqrt((our_var[k] + their_var[k]) / n), 1e-30)
        cosine = float((our_mean[k] * their_mean[k]).sum() / np.linalg.norm(our_mean[k]) /
                       np.linalg.norm(their_mean[k]))
        print(f"  {k:45s}{np.abs(our_mean[k]).mean():14.3e}{np.abs(their_mean[k]).mean():10.3e}"
              f"{np.sqrt(our_var[k]).mean():12.3e}{np.sqrt(their_var[k]).mean():10.3e}"
              f"{np.sqrt((z ** 2).mean()):8.3f}{cosine:8.4f}")


if __name__ == "__main__":
    main()
