"""The PyTorch peer of `BertTimeSeriesClassifier`: the paper's head around PyTorch's own
`torch.nn.TransformerEncoderLayer` (pre- or post-LN), its weights copied from ours for the parity test, or trained
with our recipe for the benchmark (`benchmarks.time_series`), in a process of its own:

    python -m benchmarks.time_series_torch --train=train.npz --test=test.npz --steps=1000 --seed=42 --out=theirs.json
"""

import argparse
import json
import math
import time

import numpy as np
import torch
from torch import nn


class TorchFeatureClassifier(nn.Module):
    """Features (batch, time, channels) and a (batch, time) mask -> logits (batch, classes): projection (none when
    channels == hidden), a classification vector before the steps, learned positions, LayerNorm (post-LN only) and
    dropout, `layers` PyTorch encoder layers, a final LayerNorm (pre-LN only), dropout and a dense head. In training
    each real step stays an attention key with probability `key_keep_prob`, as ours."""

    def __init__(self, channels, hidden, layers, heads, intermediate, max_positions, num_classes, norm_first, eps,
                 dropout=0.1, classifier_dropout=0.8, key_keep_prob=0.8):
        super().__init__()
        self.projection = nn.Linear(channels, hidden) if channels != hidden else None
        self.classification_vector = nn.Parameter(torch.randn(hidden) * 0.02)
        self.positions = nn.Parameter(torch.nn.init.trunc_normal_(torch.empty(max_positions, hidden), std=0.02,
                                                                  a=-0.04, b=0.04))
        self.embedding_norm = None if norm_first else nn.LayerNorm(hidden, eps=eps)
        self.embedding_dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, intermediate, dropout=dropout, activation="gelu",
                                       layer_norm_eps=eps, batch_first=True, norm_first=norm_first)
            for _ in range(layers))
        self.final_norm = nn.LayerNorm(hidden, eps=eps) if norm_first else None
        self.dropout = nn.Dropout(classifier_dropout)
        self.classifier = nn.Linear(hidden, num_classes)
        self.key_keep_prob = key_keep_prob

    def forward(self, features, mask):
        hidden = self.projection(features) if self.projection is not None else features
        first = self.classification_vector.expand(hidden.shape[0], 1, -1)
        hidden = torch.cat([first, hidden], dim=1)  # (batch, 1 + time, hidden)
        hidden = hidden + self.positions[:hidden.shape[1]]
        if self.embedding_norm is not None:
            hidden = self.embedding_norm(hidden)
        hidden = self.embedding_dropout(hidden)
        keys = mask.bool()
        if self.training and self.key_keep_prob < 1.0:
            keys = keys & (torch.rand(mask.shape) < self.key_keep_prob)
        padding = torch.cat([torch.zeros_like(keys[:, :1]), ~keys], dim=1)  # True: not attended to
        for block in self.blocks:
            hidden = block(hidden, src_key_padding_mask=padding)
        if self.final_norm is not None:
            hidden = self.final_norm(hidden)
        return self.classifier(self.dropout(hidden[:, 0]))


def _np(variable):
    import keras

    return np.asarray(keras.ops.convert_to_numpy(variable), np.float32)


def _tensor(value):
    return torch.tensor(_np(value))


def _set_norm(norm, keras_norm):
    norm.weight.data, norm.bias.data = _tensor(keras_norm.gamma), _tensor(keras_norm.beta)


def _set_linear(linear, kernel, bias):
    linear.weight.data = _tensor(np.reshape(_np(kernel), (kernel.shape[0], -1)).T)
    linear.bias.data = _tensor(np.reshape(_np(bias), (-1,)))


def torch_reference(model):
    """The `TorchFeatureClassifier` of a `BertTimeSeriesClassifier` (without its standardisation), its weights
    copied, in eval mode."""
    encoder = model.encoder
    config, embeddings = encoder.config, encoder.embeddings
    hidden = config.hidden_size
    ours = TorchFeatureClassifier(encoder.input_channels, hidden, config.num_hidden_layers,
                                  config.num_attention_heads, config.intermediate_size,
                                  config.max_position_embeddings, model.num_classes, encoder.norm_first,
                                  config.layer_norm_eps)
    if embeddings.projection is not None:
        _set_linear(ours.projection, embeddings.projection.kernel, embeddings.projection.bias)
    ours.classification_vector.data = _tensor(embeddings.classification_vector)
    ours.positions.data = _tensor(embeddings.position_embeddings)
    if ours.embedding_norm is not None:
        _set_norm(ours.embedding_norm, embeddings.layer_norm)
    for block, theirs in zip(ours.blocks, encoder.transformer_layers):
        attention = theirs.attention
        projections = (attention.query, attention.key, attention.value)
        block.self_attn.in_proj_weight.data = torch.cat(
            [_tensor(np.reshape(_np(layer.kernel), (hidden, -1)).T) for layer in projections])
        block.self_attn.in_proj_bias.data = torch.cat([_tensor(np.reshape(_np(layer.bias), (-1,)))
                                                       for layer in projections])
        block.self_attn.out_proj.weight.data = _tensor(np.reshape(_np(attention.output_dense.kernel), (-1, hidden)).T)
        block.self_attn.out_proj.bias.data = _tensor(attention.output_dense.bias)
        _set_linear(block.linear1, theirs.intermediate.kernel, theirs.intermediate.bias)
        _set_linear(block.linear2, theirs.output_dense.kernel, theirs.output_dense.bias)
        _set_norm(block.norm1, theirs.attention_layer_norm)
        _set_norm(block.norm2, theirs.output_layer_norm)
    if ours.final_norm is not None:
        _set_norm(ours.final_norm, encoder.final_layer_norm)
    _set_linear(ours.classifier, model.head.kernel, model.head.bias)
    return ours.eval()


def _read(path, max_time):
    """(features, mask, label strings) of one of our `.npz` files, the time axis padded to `max_time`."""
    with np.load(path) as data:
        features, lengths, labels = data["features"], data["lengths"], data["labels"].astype(str)
    features = np.pad(features, [(0, 0), (0, max_time - features.shape[1]), (0, 0)])
    mask = (np.arange(max_time)[None] < lengths[:, None]).astype(np.int64)
    return features, mask, labels


def train_and_test(args):
    """Our recipe in PyTorch: the training split's per-channel standardisation, AdamW (weight decay 0.01 except
    biases and LayerNorms, epsilon 1e-6), 10% linear warmup then linear decay, global-norm clipping at 1.0, a fresh
    seeded order every epoch, the last partial batch dropped. Returns test accuracy, macro F1 and the steady
    training examples/second."""
    from sklearn.metrics import accuracy_score, f1_score

    torch.manual_seed(args.seed)
    with np.load(args.train) as train, np.load(args.test) as test:
        max_time = max(train["features"].shape[1], test["features"].shape[1])
    features, mask, labels = _read(args.train, max_time)
    test_features, test_mask, test_labels = _read(args.test, max_time)
    names = sorted(set(labels.tolist()))
    real = features[mask.astype(bool)]
    mean, scale = real.mean(axis=0), real.std(axis=0)
    scale[scale == 0] = 1.0

    def tensors(values, values_mask):
        return torch.tensor((values - mean) / scale * values_mask[..., None], dtype=torch.float32)

    x, m, y = tensors(features, mask), torch.tensor(mask), torch.tensor([names.index(v) for v in labels])
    model = TorchFeatureClassifier(features.shape[2], args.hidden_size, args.num_layers, args.num_heads,
                                   4 * args.hidden_size, max_time + 1, len(names), True, 1e-5)
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "norm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.learning_rate, eps=1e-6)
    warmup = int(0.1 * args.steps)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(
        (step + 1) / max(warmup, 1), max(0.0, (args.steps - step) / max(args.steps - warmup, 1))))
    generator = torch.Generator().manual_seed(args.seed)
    per_epoch, order = len(x) // args.batch_size, None
    model.train()
    for step in range(args.steps):
        if step % per_epoch == 0:
            order = torch.randperm(len(x), generator=generator)
        if step == 1:
            start = time.perf_counter()  # the first step left out, as ours
        batch = order[(step % per_epoch) * args.batch_size:(step % per_epoch + 1) * args.batch_size]
        loss = nn.functional.cross_entropy(model(x[batch], m[batch]), y[batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    rate = (args.steps - 1) * args.batch_size / (time.perf_counter() - start) if args.steps > 1 else math.nan
    model.eval()
    with torch.no_grad():
        logits = model(tensors(test_features, test_mask), torch.tensor(test_mask))
    predicted = [names[i] for i in logits.argmax(dim=-1).tolist()]
    return {"accuracy": float(accuracy_score(test_labels, predicted)),
            "macro_f1": float(f1_score(test_labels, predicted, average="macro")), "examples_per_second": rate}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("train", "test", "out"):
        parser.add_argument(f"--{name}", required=True)
    for name, default in (("steps", 1000), ("seed", 42), ("hidden_size", 64), ("num_layers", 1), ("num_heads", 8),
                          ("batch_size", 16)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results = train_and_test(args)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    print("pytorch:", results, flush=True)


if __name__ == "__main__":
    main()
