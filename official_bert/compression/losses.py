"""Distillation losses: soft-target KL at a temperature (Hinton et al. 2015), hidden-state and attention-score MSE
(TinyBERT)."""

from keras import ops


def logits_distillation_loss(student_logits, teacher_logits, temperature=2.0, mask=None):
    """`T^2 * KL(softmax(teacher / T) || softmax(student / T))` over the last axis, averaged over the rest.

    The T^2 factor keeps the soft targets' gradients on the scale of the hard-label loss's as T changes
    (Hinton et al.). A regression head (last axis of size 1) has no distribution: its loss is the mean squared
    error between the two scores, without the temperature.

    Args:
        student_logits: (..., classes) float.
        teacher_logits: (..., classes) float, the same shape.
        temperature: softmax temperature T > 0.
        mask: optional (...) 0/1 weights of the positions (e.g. a tagger's `input_mask`, (batch, seq)); the
            mean is over the positions with weight 1.

    Returns:
        a float32 scalar.
    """
    student_logits = ops.cast(student_logits, "float32")
    teacher_logits = ops.cast(teacher_logits, "float32")
    if student_logits.shape[-1] == 1:
        per_position = ops.square(student_logits - teacher_logits)[..., 0]  # (...)
        scale = 1.0
    else:
        teacher_log_probs = ops.log_softmax(teacher_logits / temperature, axis=-1)  # (..., classes)
        student_log_probs = ops.log_softmax(student_logits / temperature, axis=-1)
        per_position = ops.sum(ops.exp(teacher_log_probs) * (teacher_log_probs - student_log_probs), axis=-1)
        scale = temperature ** 2
    return scale * _masked_mean(per_position, mask)


def hidden_state_loss(student_hidden, teacher_hidden, mask=None):
    """Mean squared error between two (batch, seq, hidden) states (the student's already projected to the
    teacher's width), averaged over the hidden units and the positions where `mask` (batch, seq) is 1."""
    per_position = ops.mean(ops.square(ops.cast(student_hidden, "float32") - ops.cast(teacher_hidden, "float32")),
                            axis=-1)  # (batch, seq)
    return _masked_mean(per_position, mask)


def attention_score_loss(student_scores, teacher_scores, mask=None):
    """Mean squared error between two layers' attention scores before the softmax (TinyBERT), each
    (batch, heads, seq, seq) with the padded keys' scores 0, averaged over the heads, the keys and the query
    positions where `mask` (batch, seq) is 1."""
    squared = ops.square(ops.cast(student_scores, "float32") - ops.cast(teacher_scores, "float32"))
    return _masked_mean(ops.mean(squared, axis=(1, 3)), mask)  # (batch, seq) queries


def _masked_mean(values, mask):
    if mask is None:
        return ops.mean(values)
    mask = ops.cast(mask, "float32")
    return ops.sum(values * mask) / ops.maximum(ops.sum(mask), 1.0)


def task_loss(loss, loss_weights, labels, outputs):
    """The task model's own loss (`TaskModel.default_loss()`, a loss or a dict of them with their weights) of
    `outputs` against `labels`, as `Model.compile(loss=..., loss_weights=...)` would compute it.

    Args:
        loss: a Keras loss, or a dict output name -> loss.
        loss_weights: None, or a dict output name -> weight.
        labels: the labels (a tensor, or a dict keyed like `loss`).
        outputs: the model's outputs, structured like `labels`.
    """
    if not isinstance(loss, dict):
        return loss(labels, outputs)
    weights = loss_weights or {}
    return sum(weights.get(name, 1.0) * fn(labels[name], outputs[name]) for name, fn in loss.items())


def output_pairs(student_outputs, teacher_outputs):
    """`[(student, teacher)]` of each logits output (one tensor, or a dict such as the span labeler's)."""
    if isinstance(student_outputs, dict):
        return [(student_outputs[name], teacher_outputs[name]) for name in sorted(student_outputs)]
    return [(student_outputs, teacher_outputs)]

