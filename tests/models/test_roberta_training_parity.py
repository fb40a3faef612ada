"""RoBERTa masked-LM training equals transformers': same initial weights, same batches, dropout off, our AdamW (with
warmup, decay, weight decay and clipping) against torch's AdamW; the MLM losses agree step for step."""

import numpy as np
import pytest

from official_bert import BertEncoder, BertPretrainer
from official_bert.checkpoints import load_config, load_pretrainer_weights, open_checkpoint
from official_bert.optimization import create_optimizer

from hf_pretraining import torch_adamw

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB, SEQ, BATCH, PREDICTIONS = 100, 16, 4, 3
STEPS, WARMUP, LEARNING_RATE, WEIGHT_DECAY, EPSILON = 20, 2, 2e-3, 0.01, 1e-6
PAD = 1


def _batches(seed=0):
    """STEPS padded batches with masked positions inside the real tokens: (our inputs, our labels, HF labels)."""
    rng = np.random.default_rng(seed)
    for _ in range(STEPS):
        lengths = rng.integers(PREDICTIONS + 2, SEQ + 1, BATCH)
        mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
        ids = np.where(mask == 1, rng.integers(3, VOCAB, (BATCH, SEQ)), PAD).astype(np.int32)
        ids[:, 0] = 0  # <s>
        positions = np.stack([np.sort(rng.choice(np.arange(1, n), PREDICTIONS, replace=False)) for n in lengths])
        targets = rng.integers(3, VOCAB, (BATCH, PREDICTIONS)).astype(np.int32)
        hf_labels = np.full((BATCH, SEQ), -100, np.int64)
        np.put_along_axis(hf_labels, positions, targets, axis=1)
        inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids),
                  "masked_lm_positions": positions.astype(np.int32)}
        labels = {"masked_lm_ids": targets, "masked_lm_weights": np.ones((BATCH, PREDICTIONS), np.float32),
                  "next_sentence_labels": np.zeros(BATCH, np.int32)}
        yield inputs, labels, hf_labels


def _our_loss(pretrainer, inputs, labels):
    """The weighted mean masked-LM cross-entropy of the current weights (the loss `fit` minimises)."""
    logits = pretrainer(inputs)["mlm_logits"].numpy().astype(np.float64)  # (batch, predictions, vocab)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels["masked_lm_ids"][..., None], axis=-1)[..., 0]
    weights = labels["masked_lm_weights"]
    return float(-(picked * weights).sum() / weights.sum())


def test_roberta_mlm_losses_equal_transformers_step_for_step(tmp_path):
    config = transformers.RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=37, max_position_embeddings=SEQ + 2, type_vocab_size=1,
                                        pad_token_id=PAD, layer_norm_eps=1e-5, hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0, attn_implementation="eager")
    torch.manual_seed(0)
    reference = transformers.RobertaForMaskedLM(config)
    reference.save_pretrained(tmp_path)
    pretrainer = BertPretrainer(BertEncoder(load_config(open_checkpoint(str(tmp_path)))), objective="mlm")
    assert load_pretrainer_weights(pretrainer, str(tmp_path))["masked_lm"]
    pretrainer.compile(optimizer=create_optimizer(LEARNING_RATE, STEPS, WARMUP, weight_decay=WEIGHT_DECAY,
                                                  epsilon=EPSILON, clip_norm=1.0), jit_compile=False)

    optimizer, schedule = torch_adamw(reference, LEARNING_RATE, STEPS, WARMUP, WEIGHT_DECAY, EPSILON)
    reference.train()

    ours, theirs = [], []
    for inputs, labels, hf_labels in _batches():
        ours.append(_our_loss(pretrainer, inputs, labels))
        pretrainer.train_on_batch(inputs, labels)
        out = reference(input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
                        attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                        labels=torch.tensor(hf_labels))
        theirs.append(float(out.loss))
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=0)
    assert theirs[-1] < theirs[0] - 0.05  # it trained
