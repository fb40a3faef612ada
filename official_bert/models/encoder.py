"""BertEncoder: the BERT backbone (and RoBERTa's, DistilBERT's, ALBERT's: options of the same layers) as a functional
Keras 3 model."""

import keras

from official_bert.config import BertConfig
from official_bert.layers import BertEmbeddings, TransformerBlock
from official_bert.layers.initializers import truncated_normal
from official_bert.layers.matmul_dense import dense_2d
from official_bert.layers.real_tokens import RealTokens
from official_bert.models.matmul_precision import float32_matmuls

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


@keras.saving.register_keras_serializable(package="official_bert")
class BertEncoder(keras.Model):
    """BERT encoder: embeddings, `num_hidden_layers` post-LN transformer blocks and a tanh pooler.

    The config's `model_type` picks the family: RoBERTa / XLM-RoBERTa count position ids past `pad_token_id`
    and have one token type; DistilBERT has no token types (`input_type_ids` is accepted and unused) and no
    pooler: its `pooled_output` is the first token's `sequence_output`, unpooled. ALBERT's embeddings have width
    `embedding_size` and a dense layer (`embedding_projection`, transformers' `embedding_hidden_mapping_in`) maps them
    to `hidden_size`; its `num_hidden_groups * inner_group_num` blocks are shared: layer i runs the
    `inner_group_num` blocks of group `config.layer_group(i)` (`transformer_layers` holds each block once, group by
    group). A head-pruned config (`pruned_heads`) gives block i `config.num_kept_heads(i)` attention heads.

    Inputs (the TF-Hub BERT contract): a dict of int32 `input_word_ids`, `input_mask`, `input_type_ids`,
    each (batch, seq) with seq <= `max_position_embeddings`.
    Outputs: a dict with `sequence_output` (batch, seq, hidden), `pooled_output` (batch, hidden),
    `encoder_outputs`, the list of every layer's (batch, seq, hidden) output (`num_hidden_layers` of them), and
    `embedding_output` (batch, seq, hidden), the first layer's input (transformers' `hidden_states[0]`).

    Args:
        config: a `BertConfig` (or its dict).
        fused_attention: the blocks' attention runs `keras.ops.dot_product_attention` where there is no attention
            dropout to apply (see `official_bert.layers.attention`); default the float32 einsum softmax.
        fused_training_kernels: training calls on TensorFlow run the GELU and LayerNorms as XLA kernels
            (`official_bert.layers.fused_training_ops`); False: the plain ops.

    Examples:
    ```python
    encoder = official_bert.BertEncoder(official_bert.BertConfig.from_preset("uncased_L-2_H-128_A-2"))
    outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    outputs["pooled_output"]  # (batch, 128)
    ```
    """

    def __init__(self, config, fused_attention=False, fused_training_kernels=True, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in ENCODER_INPUTS}
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.embedding_width,
            max_position_embeddings=config.max_position_embeddings, type_vocab_size=config.type_vocab_size,
            layer_norm_eps=config.layer_norm_eps, dropout_rate=config.hidden_dropout_prob,
            initializer_range=config.initializer_range, padding_id=config.pad_token_id,
            positions_after_padding=config.family.positions_after_padding,
            fused_training_kernels=fused_training_kernels,
            name="embeddings")
        blocks = [transformer_block(config, i, _block_name(config, i), fused_attention, fused_training_kernels)
                  for i in range(_num_blocks(config))]
        projection = None
        if config.family.shared_layers:  # ALBERT's factorised embeddings
            projection = keras.layers.Dense(
                config.hidden_size, kernel_initializer=truncated_normal(config.initializer_range),
                name="embedding_projection")
        pooler = None
        if config.has_pooler:
            pooler = keras.layers.Dense(
                config.hidden_size, activation="tanh",
                kernel_initializer=truncated_normal(config.initializer_range), name="pooler")

        hidden_states = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])  # (batch, seq, embedding)
        if projection is not None:
            hidden_states = projection(hidden_states)  # (batch, seq, hidden)
        embedding_output = hidden_states
        encoder_outputs = []
        for layer_blocks in _blocks_by_layer(config, blocks):
            for block in layer_blocks:
                hidden_states = block(hidden_states, inputs["input_mask"])
            encoder_outputs.append(hidden_states)
        first_token = hidden_states[:, 0, :]  # (batch, hidden)
        pooled_output = pooler(first_token) if pooler is not None else first_token  # (batch, hidden)
        outputs = {"sequence_output": hidden_states, "pooled_output": pooled_output,
                   "encoder_outputs": encoder_outputs, "embedding_output": embedding_output}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        self.config = config
        self.fused_attention = bool(fused_attention)
        self.fused_training_kernels = bool(fused_training_kernels)
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.embedding_projection = projection  # ALBERT's E -> H dense layer; None elsewhere
        self.pooler = pooler

    def call(self, inputs, training=None, mask=None, real_tokens=False):
        """Args:
            inputs: the encoder's dict of (batch, seq) int32 inputs.
            training: whether to apply dropout.
            mask: unused (Keras' argument).
            real_tokens: run every layer after the embeddings on the batch's real tokens only (`encode_packed`):
                for batches of unequal lengths, where padding would otherwise take its share of every matmul. The
                outputs are then `sequence_output`, equal to the padded call's at the real tokens (up to float
                rounding) and 0 at the padding, and `pooled_output`.
        """
        with float32_matmuls(self.compute_dtype):  # (on JAX, in float32: full-precision matmuls)
            if not real_tokens:
                return super().call(inputs, training=training, mask=mask)
            rows, layout = self.encode_packed(inputs, training=bool(training))
            return {"sequence_output": layout.unpack(rows),  # (batch, seq, hidden)
                    "pooled_output": self.pool(layout.first_tokens(rows))}  # (batch, hidden)

    def encode_packed(self, inputs, training=False):
        """The final hidden states of the batch's real tokens, packed in one row, with every layer after the
        embeddings run on them only (`official_bert.layers.real_tokens`); for inference and for training.

        Args:
            inputs: the encoder's dict of (batch, seq) int32 inputs.
            training: whether to apply dropout (and take the gradients `RealTokens(for_training=True)` gives).

        Returns:
            `(rows, real_tokens)`: (1, tokens, hidden) hidden states, equal to `self(inputs)`'s
            `sequence_output` at the real tokens up to float rounding, and the batch's `RealTokens`.
        """
        mask = inputs["input_mask"]
        real_tokens = RealTokens(mask, for_training=training)
        summed = self.embeddings.sum_tables(inputs["input_word_ids"], inputs["input_type_ids"])  # (b, s, embedding)
        rows = self.embeddings.normalize(real_tokens.pack(summed), training)  # (1, tokens, embedding)
        if self.embedding_projection is not None:
            rows = dense_2d(self.embedding_projection, rows)  # (1, tokens, hidden)
        for layer_blocks in _blocks_by_layer(self.config, self.transformer_layers):
            for block in layer_blocks:
                rows = block(rows, attention_mask=real_tokens, training=training)  # (1, tokens, hidden)
        return rows, real_tokens

    def pool(self, first_token):
        """The pooler on the first token's hidden state, (batch, hidden) -> (batch, hidden); the first token
        itself for an encoder without one (DistilBERT)."""
        return dense_2d(self.pooler, first_token) if self.pooler is not None else first_token

    def get_config(self):
        return {"config": self.config.to_dict(), "fused_attention": self.fused_attention,
                "fused_training_kernels": self.fused_training_kernels, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def transformer_block(config, index, name, fused_attention, fused_training_kernels, norm_first=False):
    """The `TransformerBlock` of layer `index` of an encoder of `config` (its sizes, activation, dropouts, epsilon,
    initializer and kept heads); `norm_first`: pre-LayerNorm (the feature-sequence encoder's option)."""
    return TransformerBlock(
        hidden_size=config.hidden_size, num_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, hidden_act=config.hidden_act,
        hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        layer_norm_eps=config.layer_norm_eps, initializer_range=config.initializer_range,
        num_kept_heads=config.num_kept_heads(index), fused_attention=fused_attention,
        fused_training_kernels=fused_training_kernels, norm_first=norm_first, name=name)


def _num_blocks(config) -> int:
    """Distinct transformer blocks: one per layer, or ALBERT's `num_hidden_groups * inner_group_num` shared ones."""
    if config.family.shared_layers:
        return config.num_hidden_groups * config.inner_group_num
    return config.num_hidden_layers


def _blocks_by_layer(config, blocks):
    """The blocks each of the `num_hidden_layers` layers runs, in order: its own block, or ALBERT's shared group."""
    per_layer = config.inner_group_num  # 1 outside ALBERT (its config checks that)
    for i in range(config.num_hidden_layers):
        group = config.layer_group(i)
        yield blocks[group * per_layer:(group + 1) * per_layer]


def _block_name(config, index) -> str:
    if config.family.shared_layers:
        group, inner = divmod(index, config.inner_group_num)
        return f"transformer_group_{group}_inner_{inner}"
    return f"transformer_layer_{index}"
