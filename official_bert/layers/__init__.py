"""Small Keras layers that build BERT."""

from official_bert.layers.activations import get_activation
from official_bert.layers.attention import BertSelfAttention
from official_bert.layers.embeddings import BertEmbeddings
from official_bert.layers.transformer_block import TransformerBlock

__all__ = ["BertEmbeddings", "BertSelfAttention", "TransformerBlock", "get_activation"]
