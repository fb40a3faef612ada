"""The time-series classifier's PyTorch reference: the paper's head around `torch.nn.TransformerEncoderLayer`
(PyTorch's own block, pre- or post-LN), with the weights of a `BertTimeSeriesClassifier` copied in."""

import keras
import numpy as np
import torch
from torch import nn


class TorchFeatureClassifier(nn.Module):
    """Features (batch, time, channels) and a (batch, time) mask -> logits (batch, classes), in eval mode the same
    function as `BertTimeSeriesClassifier` (no standardisation)."""

    def __init__(self, channels, hidden, layers, heads, intermediate, max_positions, num_classes, norm_first, eps):
        super().__init__()
        self.projection = nn.Linear(channels, hidden) if channels != hidden else None
        self.classification_vector = nn.Parameter(torch.zeros(hidden))
        self.positions = nn.Parameter(torch.zeros(max_positions, hidden))
        self.embedding_norm = None if norm_first else nn.LayerNorm(hidden, eps=eps)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, intermediate, dropout=0.1, activation="gelu", layer_norm_eps=eps,
                                       batch_first=True, norm_first=norm_first) for _ in range(layers))
        self.final_norm = nn.LayerNorm(hidden, eps=eps) if norm_first else None
        self.dropout = nn.Dropout(0.8)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, features, mask):
        hidden = self.projection(features) if self.projection is not None else features
        first = self.classification_vector.expand(hidden.shape[0], 1, -1)
        hidden = torch.cat([first, hidden], dim=1)
        hidden = hidden + self.positions[:hidden.shape[1]]
        if self.embedding_norm is not None:
            hidden = self.embedding_norm(hidden)
        padding = torch.cat([torch.zeros_like(mask[:, :1]), mask == 0], dim=1).bool()  # True: not attended to
        for block in self.blocks:
            hidden = block(hidden, src_key_padding_mask=padding)
        if self.final_norm is not None:
            hidden = self.final_norm(hidden)
        return self.classifier(self.dropout(hidden[:, 0]))


def _np(variable):
    return np.asarray(keras.ops.convert_to_numpy(variable), np.float32)


def _tensor(value):
    return torch.tensor(_np(value))


def _set_norm(norm, keras_norm):
    norm.weight.data, norm.bias.data = _tensor(keras_norm.gamma), _tensor(keras_norm.beta)


def _set_linear(linear, kernel, bias):
    hidden_in = kernel.shape[0]
    linear.weight.data = _tensor(np.reshape(kernel, (hidden_in, -1)).T)
    linear.bias.data = _tensor(np.reshape(bias, (-1,)))


def torch_reference(model):
    """The `TorchFeatureClassifier` of a `BertTimeSeriesClassifier`, its weights copied, in eval mode."""
    encoder = model.encoder
    config, embeddings = encoder.config, encoder.embeddings
    ours = TorchFeatureClassifier(encoder.input_channels, config.hidden_size, config.num_hidden_layers,
                                  config.num_attention_heads, config.intermediate_size,
                                  config.max_position_embeddings, model.num_classes, encoder.norm_first,
                                  config.layer_norm_eps)
    if embeddings.projection is not None:
        _set_linear(ours.projection, _np(embeddings.projection.kernel), _np(embeddings.projection.bias))
    ours.classification_vector.data = _tensor(embeddings.classification_vector)
    ours.positions.data = _tensor(embeddings.position_embeddings)
    if ours.embedding_norm is not None:
        _set_norm(ours.embedding_norm, embeddings.layer_norm)
    for block, theirs in zip(ours.blocks, encoder.transformer_layers):
        attention = theirs.attention
        block.self_attn.in_proj_weight.data = torch.cat(
            [_tensor(np.reshape(_np(layer.kernel), (config.hidden_size, -1)).T)
             for layer in (attention.query, attention.key, attention.value)])
        block.self_attn.in_proj_bias.data = torch.cat(
            [_tensor(np.reshape(_np(layer.bias), (-1,))) for layer in (attention.query, attention.key,
                                                                             attention.value)])
        out = attention.output_dense
        block.self_attn.out_proj.weight.data = _tensor(np.reshape(_np(out.kernel), (-1, config.hidden_size)).T)
        block.self_attn.out_proj.bias.data = _tensor(out.bias)
        _set_linear(block.linear1, _np(theirs.intermediate.kernel), _np(theirs.intermediate.bias))
        _set_linear(block.linear2, _np(theirs.output_dense.kernel), _np(theirs.output_dense.bias))
        _set_norm(block.norm1, theirs.attention_layer_norm)
        _set_norm(block.norm2, theirs.output_layer_norm)
    if ours.final_norm is not None:
        _set_norm(ours.final_norm, encoder.final_layer_norm)
    _set_linear(ours.classifier, _np(model.head.kernel), _np(model.head.bias))
    return ours.eval()
