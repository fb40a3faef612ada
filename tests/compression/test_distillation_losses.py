"""Distillation losses against torch's KL divergence and MSE (the references)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from official_bert.compression.losses import attention_score_loss, hidden_state_loss, logits_distillation_loss


def _torch_kd(student, teacher, temperature):
    s, t = torch.tensor(student) / temperature, torch.tensor(teacher) / temperature
    return F.kl_div(F.log_softmax(s, -1), F.log_softmax(t, -1), log_target=True, reduction="batchmean").item()


def test_identical_logits_give_zero_loss():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 3)).astype("float32")
    assert float(logits_distillation_loss(logits, logits, 2.0)) == pytest.approx(0.0, abs=1e-6)
    tokens = rng.normal(size=(2, 5, 9)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert float(logits_distillation_loss(tokens, tokens, 3.0, mask)) == pytest.approx(0.0, abs=1e-6)
    scores = rng.normal(size=(4, 1)).astype("float32")  # regression
    assert float(logits_distillation_loss(scores, scores, 2.0)) == 0.0


@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_kl_matches_torch_and_is_scaled_by_t_squared(temperature):
    rng = np.random.default_rng(1)
    student, teacher = rng.normal(size=(2, 8, 5)).astype("float32")
    loss = float(logits_distillation_loss(student, teacher, temperature))
    kl = _torch_kd(student, teacher, temperature)
    assert kl > 0
    assert loss == pytest.approx(temperature ** 2 * kl, rel=1e-5)


def test_token_loss_averages_only_unmasked_positions():
    rng = np.random.default_rng(2)
    student, teacher = rng.normal(size=(2, 2, 4, 6)).astype("float32")
    mask = np.array([[1, 1, 0, 0], [1, 0, 0, 0]])
    expected = 4.0 * _torch_kd(student[mask == 1], teacher[mask == 1], 2.0)
    assert float(logits_distillation_loss(student, teacher, 2.0, mask)) == pytest.approx(expected, rel=1e-5)


def test_regression_scores_are_matched_by_squared_error():
    student, teacher = np.array([[1.0], [2.0]], "float32"), np.array([[0.0], [4.0]], "float32")
    assert float(logits_distillation_loss(student, teacher, 2.0)) == pytest.approx(2.5)  # (1 + 4) / 2, no T^2


def test_hidden_state_loss_matches_torch_mse_over_unmasked_positions():
    rng = np.random.default_rng(3)
    student, teacher = rng.normal(size=(2, 2, 3, 8)).astype("float32")
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    expected = F.mse_loss(torch.tensor(student[mask == 1]), torch.tensor(teacher[mask == 1])).item()
    assert float(hidden_state_loss(student, teacher, mask)) == pytest.approx(expected, rel=1e-5)


def test_attention_score_loss_matches_torch_mse_over_real_queries():
    rng = np.random.default_rng(4)
    student, teacher = rng.normal(size=(2, 2, 4, 3, 3)).astype("float32")  # (batch, heads, query, key)
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    rows = lambda scores: torch.tensor(scores.transpose(0, 2, 1, 3)[mask == 1])  # noqa: E731 (real queries, heads, keys)
    expected = F.mse_loss(rows(student), rows(teacher)).item()
    assert float(attention_score_loss(student, teacher, mask)) == pytest.approx(expected, rel=1e-5)
    assert float(attention_score_loss(student, student, mask)) == 0.0
