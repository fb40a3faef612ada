"""Where each of our Keras variables lives in Google's and Hugging Face's checkpoints.

One `WeightSpec` per variable names it in both formats and gives its layout there:

- `canonical_shape`: the shape in Google's TF1 checkpoints, where dense kernels are `[in, out]`
  (our EinsumDense kernels `[hidden, heads, head_size]` flatten to `[hidden, hidden]`; a head-pruned layer's
  `[hidden, kept, head_size]` to `[hidden, kept * head_size]`, the kept heads in order, which is how transformers'
  `prune_heads` slices `query/key/value.weight` and `attention.output.dense.weight`).
- `google_transposed`: Google stores it `[out, in]` (`cls/seq_relationship/output_weights` and the
  classifier's `output_weights`).
- `hf_transposed`: Hugging Face stores it `[out, in]` (every `nn.Linear` weight).

`checkpoints.heads` names the task models' heads with `dense_specs`, so every loader and writer goes through
the same table.
"""

import dataclasses
from typing import List, Optional

import numpy as np


@dataclasses.dataclass
class WeightSpec:
    """One variable and its names and layouts in the two checkpoint formats.

    Args:
        variable: the Keras variable.
        google_name: its name in a Google TF1 checkpoint.
        hf_name: its name in a Hugging Face state dict (without a `bert.` prefix for encoder weights).
        canonical_shape: its shape in Google's layout (kernels `[in, out]`).
        google_transposed: Google stores the transpose of `canonical_shape`.
        hf_transposed: Hugging Face stores the transpose of `canonical_shape`.
    """

    variable: object
    google_name: Optional[str]
    hf_name: Optional[str]
    canonical_shape: tuple
    google_transposed: bool = False
    hf_transposed: bool = False

    def stored_shape(self, fmt: str) -> tuple:
        """The shape this weight has in format `fmt` ("google" or "hf")."""
        transposed = self.google_transposed if fmt == "google" else self.hf_transposed
        return tuple(reversed(self.canonical_shape)) if transposed else tuple(self.canonical_shape)

    def name(self, fmt: str) -> Optional[str]:
        return self.google_name if fmt == "google" else self.hf_name

    def to_variable_value(self, stored: np.ndarray, fmt: str, source: str = "checkpoint") -> np.ndarray:
        """Converts a stored tensor to our variable's shape; raises naming the variable and both shapes."""
        expected = self.stored_shape(fmt)
        if tuple(stored.shape) != expected:
            raise ValueError(
                f"{source}: variable '{self.name(fmt)}' has shape {tuple(stored.shape)}, expected {expected} "
                f"(for {self.variable.path} of shape {tuple(self.variable.shape)})")
        transposed = self.google_transposed if fmt == "google" else self.hf_transposed
        value = stored.T if transposed else stored
        return np.reshape(value, self.variable.shape)

    def to_stored_value(self, fmt: str) -> np.ndarray:
        """Our variable's value in the layout of format `fmt`."""
        value = np.reshape(np.asarray(self.variable.numpy(), dtype=np.float32), self.canonical_shape)
        transposed = self.google_transposed if fmt == "google" else self.hf_transposed
        return np.ascontiguousarray(value.T if transposed else value)


def dense_specs(layer, google_prefix, hf_prefix, google_kernel="kernel", google_bias="bias",
                google_transposed=False) -> List[WeightSpec]:
    """Specs of a Dense or EinsumDense layer's kernel and bias.

    Args:
        layer: a built `keras.layers.Dense` or `EinsumDense` with one input axis group and a bias.
        google_prefix: e.g. "bert/pooler/dense"; names are `{google_prefix}/{google_kernel}` ("" for top level).
        hf_prefix: e.g. "pooler.dense"; names are `{hf_prefix}.weight` and `.bias`.
        google_kernel / google_bias: the kernel's and bias's leaf names in Google's checkpoint.
        google_transposed: Google stores this kernel `[out, in]`.
    """
    bias = layer.bias
    google_prefix = f"{google_prefix}/" if google_prefix else ""
    out_size = int(np.prod(bias.shape))
    in_size = int(np.prod(layer.kernel.shape)) // out_size
    return [
        WeightSpec(layer.kernel, f"{google_prefix}{google_kernel}", f"{hf_prefix}.weight", (in_size, out_size),
                   google_transposed=google_transposed, hf_transposed=True),
        WeightSpec(bias, f"{google_prefix}{google_bias}", f"{hf_prefix}.bias", (out_size,)),
    ]


def layer_norm_specs(layer, google_prefix, hf_prefix) -> List[WeightSpec]:
    """Specs of a LayerNormalization's gamma (`weight`) and beta (`bias`)."""
    size = (int(layer.gamma.shape[0]),)
    return [
        WeightSpec(layer.gamma, f"{google_prefix}/gamma", f"{hf_prefix}.weight", size),
        WeightSpec(layer.beta, f"{google_prefix}/beta", f"{hf_prefix}.bias", size),
    ]


def _distilbert_specs(encoder) -> List[WeightSpec]:
    """Hugging Face `DistilBertModel` names (`transformer.layer.0.attention.q_lin.weight`, ...); no Google names."""
    emb = encoder.embeddings
    specs = [
        WeightSpec(emb.word_embeddings, None, "embeddings.word_embeddings.weight", tuple(emb.word_embeddings.shape)),
        WeightSpec(emb.position_embeddings, None, "embeddings.position_embeddings.weight",
                   tuple(emb.position_embeddings.shape)),
        *layer_norm_specs(emb.layer_norm, None, "embeddings.LayerNorm"),
    ]
    for i, block in enumerate(encoder.transformer_layers):
        hf = f"transformer.layer.{i}"
        attention = block.attention
        for ours, theirs in (("query", "q_lin"), ("key", "k_lin"), ("value", "v_lin"), ("output_dense", "out_lin")):
            specs += dense_specs(getattr(attention, ours), None, f"{hf}.attention.{theirs}")
        specs += layer_norm_specs(block.attention_layer_norm, None, f"{hf}.sa_layer_norm")
        specs += dense_specs(block.intermediate, None, f"{hf}.ffn.lin1")
        specs += dense_specs(block.output_dense, None, f"{hf}.ffn.lin2")
        specs += layer_norm_specs(block.output_layer_norm, None, f"{hf}.output_layer_norm")
    return hf_only(specs)


def _embedding_specs(emb) -> List[WeightSpec]:
    """BERT's (and RoBERTa's, ALBERT's) embedding tables and LayerNorm, in Google's and Hugging Face naming."""
    return [
        WeightSpec(emb.word_embeddings, "bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight",
                   tuple(emb.word_embeddings.shape)),
        WeightSpec(emb.position_embeddings, "bert/embeddings/position_embeddings",
                   "embeddings.position_embeddings.weight", tuple(emb.position_embeddings.shape)),
        WeightSpec(emb.token_type_embeddings, "bert/embeddings/token_type_embeddings",
                   "embeddings.token_type_embeddings.weight", tuple(emb.token_type_embeddings.shape)),
        *layer_norm_specs(emb.layer_norm, "bert/embeddings/LayerNorm", "embeddings.LayerNorm"),
    ]


def _albert_specs(encoder) -> List[WeightSpec]:
    """ALBERT's names: Google's original TF checkpoints (`bert/encoder/transformer/group_0/inner_group_0/...`, as
    transformers' `load_tf_weights_in_albert` maps them) and transformers' `AlbertModel`
    (`encoder.albert_layer_groups.0.albert_layers.0...`). Each shared block is named once; the pooler comes last."""
    specs = [
        *_embedding_specs(encoder.embeddings),
        *dense_specs(encoder.embedding_projection, "bert/encoder/embedding_hidden_mapping_in",
                     "encoder.embedding_hidden_mapping_in"),
    ]
    inner_group_num = encoder.config.inner_group_num
    for i, block in enumerate(encoder.transformer_layers):
        group, inner = divmod(i, inner_group_num)
        google = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        hf = f"encoder.albert_layer_groups.{group}.albert_layers.{inner}"
        attention = block.attention
        for name in ("query", "key", "value"):
            specs += dense_specs(getattr(attention, name), f"{google}/attention_1/self/{name}",
                                 f"{hf}.attention.{name}")
        specs += dense_specs(attention.output_dense, f"{google}/attention_1/output/dense", f"{hf}.attention.dense")
        specs += layer_norm_specs(block.attention_layer_norm, f"{google}/LayerNorm", f"{hf}.attention.LayerNorm")
        specs += dense_specs(block.intermediate, f"{google}/ffn_1/intermediate/dense", f"{hf}.ffn")
        specs += dense_specs(block.output_dense, f"{google}/ffn_1/intermediate/output/dense", f"{hf}.ffn_output")
        specs += layer_norm_specs(block.output_layer_norm, f"{google}/LayerNorm_1", f"{hf}.full_layer_layer_norm")
    specs += dense_specs(encoder.pooler, "bert/pooler/dense", "pooler")
    return specs


def hf_only(specs: List[WeightSpec]) -> List[WeightSpec]:
    """`specs` without Google names: weights of families that Google's TF1 checkpoints never held."""
    return [dataclasses.replace(spec, google_name=None) for spec in specs]


def encoder_specs(encoder) -> List[WeightSpec]:
    """Specs of every variable of a `BertEncoder`, in its family's naming (`ModelFamily.encoder_weight_names`):
    Google's and Hugging Face `BertModel` names (RoBERTa's encoder has BERT's Hugging Face names); DistilBERT's and
    ALBERT's their own, see `_distilbert_specs` and `_albert_specs`. The pooler's two specs, when the encoder has
    one, come last."""
    return _ENCODER_NAMINGS[encoder.config.family.encoder_weight_names](encoder)


def _bert_specs(encoder) -> List[WeightSpec]:
    """BERT's names (Google's `bert/encoder/layer_N/...`, Hugging Face's `encoder.layer.N...`)."""
    specs = _embedding_specs(encoder.embeddings)
    for i, block in enumerate(encoder.transformer_layers):
        google = f"bert/encoder/layer_{i}"
        hf = f"encoder.layer.{i}"
        attention = block.attention
        for name in ("query", "key", "value"):
            specs += dense_specs(getattr(attention, name), f"{google}/attention/self/{name}",
                                 f"{hf}.attention.self.{name}")
        specs += dense_specs(attention.output_dense, f"{google}/attention/output/dense", f"{hf}.attention.output.dense")
        specs += layer_norm_specs(block.attention_layer_norm, f"{google}/attention/output/LayerNorm",
                                  f"{hf}.attention.output.LayerNorm")
        specs += dense_specs(block.intermediate, f"{google}/intermediate/dense", f"{hf}.intermediate.dense")
        specs += dense_specs(block.output_dense, f"{google}/output/dense", f"{hf}.output.dense")
        specs += layer_norm_specs(block.output_layer_norm, f"{google}/output/LayerNorm", f"{hf}.output.LayerNorm")
    specs += dense_specs(encoder.pooler, "bert/pooler/dense", "pooler.dense")
    return specs


# `ModelFamily.encoder_weight_names` -> the specs of an encoder in that naming.
_ENCODER_NAMINGS = {"bert": _bert_specs, "distilbert": _distilbert_specs, "albert": _albert_specs}
