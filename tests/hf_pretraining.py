"""A tiny random transformers `BertForPreTraining` and padded batches: the reference of the pre-training tests."""

import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder, BertPretrainer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

HF_CONFIG = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=40, type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12)


def randomized(model, seed=0):
    """Every parameter (LayerNorms and biases too) random, so no weight can load into the wrong place unseen."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    return model.eval()


def save_hf_pretraining(path):
    """Saves a tiny random `BertForPreTraining` (safetensors) at `path`; returns `path`."""
    randomized(transformers.BertForPreTraining(transformers.BertConfig(**HF_CONFIG))).save_pretrained(path)
    return path


def pretrainer_for(config_dir):
    """A fresh `BertPretrainer` shaped by the `config.json` in `config_dir`."""
    return BertPretrainer(BertEncoder(BertConfig.from_json_file(config_dir / "config.json")))


def batch(seed=0, batch=3, seq=12, predictions=4):
    """Padded inputs, distinct masked positions inside the real tokens (some prediction slots unused)."""
    rng = np.random.default_rng(seed)
    lengths = [seq, 9, 6]
    mask = (np.arange(seq)[None] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(1, HF_CONFIG["vocab_size"], (batch, seq)).astype(np.int32) * mask
    types = ((np.arange(seq)[None] >= np.array(lengths)[:, None] // 2) * mask).astype(np.int32)
    positions = np.zeros((batch, predictions), np.int32)
    weights = np.zeros((batch, predictions), np.float32)
    for i, (length, used) in enumerate(zip(lengths, (4, 3, 2))):
        positions[i, :used] = np.sort(rng.choice(np.arange(1, length - 1), used, replace=False))
        weights[i, :used] = 1.0
    labels = {"masked_lm_ids": (rng.integers(1, HF_CONFIG["vocab_size"], (batch, predictions)) * weights
                                ).astype(np.int32),
              "masked_lm_weights": weights, "next_sentence_labels": np.array([0, 1, 1], np.int32)}
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types, "masked_lm_positions": positions}
    return inputs, labels


def hf_outputs(model, inputs, labels):
    """transformers' logits at our masked positions, NSP logits and its loss (labels -100 off the masked slots)."""
    mlm_labels = np.full(inputs["input_word_ids"].shape, -100, np.int64)
    for i in range(mlm_labels.shape[0]):
        used = labels["masked_lm_weights"][i] > 0
        mlm_labels[i, inputs["masked_lm_positions"][i, used]] = labels["masked_lm_ids"][i, used]
    with torch.no_grad():
        out = model(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                    attention_mask=torch.tensor(inputs["input_mask"]).long(),
                    token_type_ids=torch.tensor(inputs["input_type_ids"]).long(),
                    labels=torch.tensor(mlm_labels),
                    next_sentence_label=torch.tensor(labels["next_sentence_labels"].astype(np.int64)))
    logits = out.prediction_logits.numpy()  # (batch, seq, vocab)
    gathered = np.take_along_axis(logits, inputs["masked_lm_positions"][..., None].astype(np.int64), axis=1)
    return gathered, out.seq_relationship_logits.numpy(), float(out.loss)


def torch_adamw(reference, learning_rate, steps, warmup, weight_decay, epsilon):
    """transformers' fine-tuning optimizer for `reference`: torch AdamW, no weight decay on biases and LayerNorms,
    linear warmup then linear decay (what `official_bert.optimization.create_optimizer` builds).

    Returns: `(optimizer, schedule)`; step both after each backward pass.
    """
    no_decay = [p for n, p in reference.named_parameters() if n.endswith("bias") or "LayerNorm" in n
                or "layer_norm" in n]
    decay = [p for n, p in reference.named_parameters() if not any(p is q for q in no_decay)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=learning_rate, eps=epsilon)
    return optimizer, transformers.get_linear_schedule_with_warmup(optimizer, warmup, steps)

