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


# A RoBERTa byte-level BPE vocab (ids 0..31), no merges: enough for lower-case ASCII text.
BPE_VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, **{chr(c): 5 + i for i, c in enumerate(
    range(ord("a"), ord("z") + 1))}, "Ġ": 31}


def roberta_directory(path, max_position_embeddings):
    """A tiny random `RobertaModel` directory (pad id 1, so `max_position_embeddings - 2` tokens fit) with the
    `BPE_VOCAB` files; returns `path`."""
    import json

    from official_bert import BertConfig, BertEncoder
    from official_bert.checkpoints import save_encoder

    config = BertConfig(model_type="roberta", vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=max_position_embeddings, type_vocab_size=1,
                        pad_token_id=1, layer_norm_eps=1e-5)
    save_encoder(BertEncoder(config), path)
    (path / "vocab.json").write_text(json.dumps(BPE_VOCAB), encoding="utf-8")
    (path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return path
