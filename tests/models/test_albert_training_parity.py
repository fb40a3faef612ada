"""ALBERT MLM + SOP training equals transformers': the same initial weights (a tiny `AlbertForPreTraining` whose 4
layers share 2 groups of 2 blocks, E=16, H=32), the same batches, dropout off, our AdamW (with warmup, decay, weight
decay and clipping) against torch's AdamW; the masked-LM and sentence-order losses agree step for step."""

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
STEPS, WARMUP, LEARNING_RATE, WEIGHT_DECAY, EPSILON = 10, 2, 2e-3, 0.01, 1e-6
PAD, CLS, SEP = 0, 2, 3


def _batches(seed=0):
    """STEPS padded two-segment batches (two distinct ones, in turn, so that the losses fall), masked positions
    inside the real tokens, random sentence-order labels: (our inputs, our labels, HF MLM labels)."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(2):
        lengths = rng.integers(PREDICTIONS + 4, SEQ + 1, BATCH)
        mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
        ids = np.where(mask == 1, rng.integers(5, VOCAB, (BATCH, SEQ)), PAD).astype(np.int32)
        ids[:, 0] = CLS
        types = ((np.arange(SEQ)[None] >= (lengths[:, None] // 2)) * mask).astype(np.int32)
        positions = np.stack([np.sort(rng.choice(np.arange(1, n), PREDICTIONS, replace=False)) for n in lengths])
        targets = rng.integers(5, VOCAB, (BATCH, PREDICTIONS)).astype(np.int32)
        hf_labels = np.full((BATCH, SEQ), -100, np.int64)
        np.put_along_axis(hf_labels, positions, targets, axis=1)
        inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types,
                  "masked_lm_positions": positions.astype(np.int32)}
        labels = {"masked_lm_ids": targets, "masked_lm_weights": np.ones((BATCH, PREDICTIONS), np.float32),
                  "next_sentence_labels": rng.integers(0, 2, BATCH).astype(np.int32)}
        batches.append((inputs, labels, hf_labels))
    return [batches[step % 2] for step in range(STEPS)]


def _cross_entropy(logits, labels):
    logits = logits.astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None].astype(np.int64), axis=-1)[..., 0]


def _our_losses(pretrainer, inputs, labels):
    """The masked-LM and sentence-order losses of the current weights (their sum is what `fit` minimises)."""
    outputs = pretrainer(inputs)
    mlm = _cross_entropy(outputs["mlm_logits"].numpy(), labels["masked_lm_ids"]).mean()
    sop = _cross_entropy(outputs["nsp_logits"].numpy(), labels["next_sentence_labels"]).mean()
    return float(mlm), float(sop)


def test_albert_mlm_sop_losses_equal_transformers_step_for_step(tmp_path):
    config = transformers.AlbertConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                                       num_hidden_groups=2, inner_group_num=2, num_attention_heads=4,
                                       intermediate_size=37, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
                                       attn_implementation="eager")
    torch.manual_seed(0)
    reference = transformers.AlbertForPreTraining(config)
    reference.save_pretrained(tmp_path)
    pretrainer = BertPretrainer(BertEncoder(load_config(open_checkpoint(str(tmp_path)))), objective="mlm_sop")
    assert load_pretrainer_weights(pretrainer, str(tmp_path)) == {"masked_lm": True, "next_sentence": True}
    pretrainer.compile(optimizer=create_optimizer(LEARNING_RATE, STEPS, WARMUP, weight_decay=WEIGHT_DECAY,
                                                  epsilon=EPSILON, clip_norm=1.0), jit_compile=False)

    optimizer, schedule = torch_adamw(reference, LEARNING_RATE, STEPS, WARMUP, WEIGHT_DECAY, EPSILON)
    reference.train()

    ours, theirs = [], []
    for inputs, labels, hf_labels in _batches():
        ours.append(_our_losses(pretrainer, inputs, labels))
        pretrainer.train_on_batch(inputs, labels)
        out = reference(input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
                        attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                        token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long))
        mlm = torch.nn.functional.cross_entropy(out.prediction_logits.view(-1, VOCAB), torch.tensor(hf_labels).view(-1))
        sop = torch.nn.functional.cross_entropy(out.sop_logits,
                                                torch.tensor(labels["next_sentence_labels"], dtype=torch.long))
        theirs.append((mlm.item(), sop.item()))
        (mlm + sop).backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    ours, theirs = np.array(ours), np.array(theirs)
    print("max relative difference (MLM, SOP):", (np.abs(ours - theirs) / np.abs(theirs)).max(axis=0))
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=0)
    assert theirs[-2:].sum() < theirs[:2].sum() - 0.1  # it trained
