"""BertFeatureEncoder: BERT's transformer blocks over a sequence of feature vectors instead of word pieces."""

import keras

from official_bert.config import BertConfig
from official_bert.layers.feature_embeddings import FeatureEmbeddings, KeyKeepMask
from official_bert.models.encoder import transformer_block
from official_bert.models.matmul_precision import Float32Matmuls

FEATURE_INPUTS = ("input_features", "input_mask")
# How a new encoder's dense weights are drawn: "bert": truncated normal at the config's `initializer_range`, zero
# biases (BERT's); "fan_in": PyTorch's defaults for `nn.Linear` and `nn.TransformerEncoderLayer` (kernels and
# biases uniform in +-1/sqrt(fan_in); the attention's query, key and value kernels Xavier-uniform over their
# concatenation and its biases zero), which train a small encoder from scratch better (docs/time-series.md).
INIT_SCHEMES = ("bert", "fan_in")


def fan_in_uniform(fan_in):
    """PyTorch's default `nn.Linear` initializer of a layer with `fan_in` inputs: uniform in +-1/sqrt(fan_in), for
    its kernel and its bias."""
    bound = fan_in ** -0.5
    return keras.initializers.RandomUniform(-bound, bound)


def _draw(variable, initializer):
    variable.assign(initializer(variable.shape, dtype=variable.dtype))


def _fan_in_initialize(embeddings, blocks, hidden_size, intermediate_size):
    """Draws the projection's and the blocks' dense weights again under the "fan_in" scheme."""
    if embeddings.projection is not None:
        for variable in (embeddings.projection.kernel, embeddings.projection.bias):
            _draw(variable, fan_in_uniform(embeddings.input_channels))
    # Xavier-uniform over the (3 * hidden, hidden) in-projection of nn.MultiheadAttention: +-sqrt(6 / (4 * hidden)).
    # One initializer per kernel: an unseeded Keras initializer gives the same values at every call.
    bound = (1.5 / hidden_size) ** 0.5
    for block in blocks:
        attention = block.attention
        for layer in (attention.query, attention.key, attention.value):
            _draw(layer.kernel, keras.initializers.RandomUniform(-bound, bound))  # (biases stay zero, as PyTorch's)
        _draw(attention.output_dense.kernel, fan_in_uniform(hidden_size))
        for variable in (block.intermediate.kernel, block.intermediate.bias):
            _draw(variable, fan_in_uniform(hidden_size))
        for variable in (block.output_dense.kernel, block.output_dense.bias):
            _draw(variable, fan_in_uniform(intermediate_size))


@keras.saving.register_keras_serializable(package="official_bert")
class BertFeatureEncoder(Float32Matmuls, keras.Model):
    """An encoder over per-time-step feature vectors (clip features of a 3D CNN, sensor windows, ...), read at a
    learned classification position: Kalfaoglu et al. 2020's late temporal model, with `BertEncoder`'s blocks.

    The features are projected to `hidden_size` (no layer when `input_channels` equals it), a learned classification
    vector goes before them, learned position embeddings are added, then dropout (after BERT's embedding LayerNorm
    in a post-LN encoder) and `num_hidden_layers` `TransformerBlock`s, post-LN as BERT or pre-LN (`norm_first`, the
    paper's; a final LayerNorm then closes the stack, as in ViT). There is no segment embedding and no pooler: the
    `pooled_output` is the classification position's final hidden state. In training each real time step stays an
    attention key with probability `key_keep_prob` (`KeyKeepMask`).

    The `config` gives the blocks' shape and the position table (`max_position_embeddings`: the classification
    position and up to `max_position_embeddings - 1` steps); its vocabulary, token-type and pooler settings are
    unused.

    Inputs: a dict of `input_features` (batch, time, input_channels) float32 and `input_mask` (batch, time) int32,
    1 on real steps and 0 on padding.
    Outputs: a dict with `sequence_output` (batch, 1 + time, hidden) (position 0: the classification position),
    `pooled_output` (batch, hidden), `encoder_outputs` (every block's output) and `embedding_output`.

    Args:
        config: a `BertConfig` (or its dict).
        input_channels: the features' channels; None: `hidden_size` (no projection, as in the paper).
        norm_first: pre-LN blocks and a final LayerNorm; False: post-LN blocks after an embedding LayerNorm.
        key_keep_prob: in (0, 1]: the share of time steps kept as attention keys in training.
        fused_attention: see `BertEncoder`.
        fused_training_kernels: see `BertEncoder`.
        init_scheme: how the dense weights of a new encoder are drawn, one of `INIT_SCHEMES` ("bert": truncated
            normal at `config.initializer_range`; "fan_in": PyTorch's defaults). The classification vector and
            the position table are N(0, initializer_range) in both.

    Examples:
    ```python
    config = official_bert.BertConfig(hidden_size=64, num_hidden_layers=1, num_attention_heads=8,
                                      intermediate_size=256, max_position_embeddings=101)
    encoder = official_bert.BertFeatureEncoder(config, input_channels=6, norm_first=True, key_keep_prob=0.8)
    encoder({"input_features": features, "input_mask": mask})["pooled_output"]  # (batch, 64)
    ```
    """

    def __init__(self, config, input_channels=None, norm_first=False, key_keep_prob=1.0, fused_attention=False,
                 fused_training_kernels=True, init_scheme="bert", **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if init_scheme not in INIT_SCHEMES:
            raise ValueError(f"init_scheme must be one of {INIT_SCHEMES}, got {init_scheme!r}")
        input_channels = config.hidden_size if input_channels is None else int(input_channels)
        inputs = {"input_features": keras.Input(shape=(None, input_channels), dtype="float32",
                                                name="input_features"),
                  "input_mask": keras.Input(shape=(None,), dtype="int32", name="input_mask")}
        embeddings = FeatureEmbeddings(
            input_channels, config.hidden_size, config.max_position_embeddings, config.hidden_dropout_prob,
            config.initializer_range, normalize=not norm_first, layer_norm_eps=config.layer_norm_eps,
            fused_training_kernels=fused_training_kernels, name="embeddings")
        key_mask = KeyKeepMask(key_keep_prob, name="key_keep_mask")
        blocks = [transformer_block(config, i, f"transformer_layer_{i}", fused_attention, fused_training_kernels,
                                    norm_first=norm_first) for i in range(config.num_hidden_layers)]
        final_layer_norm = None
        if norm_first:
            final_layer_norm = keras.layers.LayerNormalization(epsilon=config.layer_norm_eps, dtype="float32",
                                                               name="final_layer_norm")

        hidden_states = embeddings(inputs["input_features"])  # (batch, 1 + time, hidden)
        attention_mask = key_mask(inputs["input_mask"])  # (batch, 1 + time)
        embedding_output = hidden_states
        encoder_outputs = []
        for block in blocks:
            hidden_states = block(hidden_states, attention_mask)
            encoder_outputs.append(hidden_states)
        if final_layer_norm is not None:
            hidden_states = final_layer_norm(hidden_states)
        outputs = {"sequence_output": hidden_states, "pooled_output": hidden_states[:, 0, :],  # (batch, hidden)
                   "encoder_outputs": encoder_outputs, "embedding_output": embedding_output}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        if init_scheme == "fan_in":
            _fan_in_initialize(embeddings, blocks, config.hidden_size, config.intermediate_size)

        self.config = config
        self.input_channels = input_channels
        self.norm_first = bool(norm_first)
        self.key_keep_prob = float(key_keep_prob)
        self.fused_attention = bool(fused_attention)
        self.fused_training_kernels = bool(fused_training_kernels)
        self.init_scheme = init_scheme
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.final_layer_norm = final_layer_norm

    def get_config(self):
        return {"config": self.config.to_dict(), "input_channels": self.input_channels, "norm_first": self.norm_first,
                "key_keep_prob": self.key_keep_prob, "fused_attention": self.fused_attention,
                "fused_training_kernels": self.fused_training_kernels, "init_scheme": self.init_scheme,
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
