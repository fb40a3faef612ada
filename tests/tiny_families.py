"""Tiny encoder configs of every family and padded inputs for them, shared by the real-token tests."""

import numpy as np

FAMILIES = {
    "bert": dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=40, type_vocab_size=2),
    "roberta": dict(model_type="roberta", vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, max_position_embeddings=44, type_vocab_size=1, pad_token_id=1),
    "distilbert": dict(model_type="distilbert", vocab_size=100, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, max_position_embeddings=40, type_vocab_size=0),
    "albert": dict(model_type="albert", vocab_size=100, embedding_size=8, hidden_size=16, num_hidden_layers=4,
                   num_hidden_groups=2, inner_group_num=1, num_attention_heads=2, intermediate_size=24,
                   max_position_embeddings=40, hidden_act="gelu_new"),
}


def padded_inputs(lengths, seq=12, seed=0):
    """Texts of `lengths` real tokens, padded to `seq` (pad id 1 as RoBERTa's; a BERT pad id differs only in
    which row is looked up, and the mask hides it)."""
    rng = np.random.default_rng(seed)
    mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype("int32")
    ids = np.where(mask == 1, rng.integers(3, 100, mask.shape), 1).astype("int32")
    types = ((np.arange(seq)[None, :] >= 3) * mask).astype("int32")
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
