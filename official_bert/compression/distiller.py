"""Distiller: trains a student task model to match a frozen teacher (soft targets, hidden states) and the labels."""

import keras
from keras import ops

from official_bert import keras_compat
from official_bert.compression.losses import (attention_score_loss, hidden_state_loss, logits_distillation_loss,
                                              output_pairs, task_loss)
from official_bert.compression.teacher_cache import TEACHER_LOGITS
from official_bert.models.distribution import reducible_across_workers
from official_bert.models.matmul_precision import Float32Matmuls, float32_matmuls


def _with_hidden_states(model):
    """A functional model of the task model's outputs and its encoder's per-layer states, sharing its layers:
    `{"logits": outputs, "embedding": (batch, seq, hidden), "hidden": [(batch, seq, hidden)] * layers}`, in one
    forward pass."""
    encoder_outputs = keras_compat.outputs_of_first_call(model.encoder)  # the task model's one call of it
    return keras.Model(model.input, {"logits": model.output, "embedding": encoder_outputs["embedding_output"],
                                     "hidden": encoder_outputs["encoder_outputs"]})


def _attention_of_layer(encoder, layer):
    """The `BertSelfAttention` that layer `layer` of `encoder` runs (ALBERT: its group's one block)."""
    config = encoder.config
    if config.inner_group_num != 1:
        raise ValueError("the attention loss needs one block per layer; this ALBERT runs "
                         f"inner_group_num={config.inner_group_num}")
    return encoder.transformer_layers[config.layer_group(layer)].attention


def check_settings(alpha, temperature, hidden_weight, attention_weight=0.0):
    """Raises ValueError (naming the flag) for an alpha outside [0, 1], a temperature <= 0 or a negative
    hidden-state or attention weight."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"--alpha={alpha} must be in [0, 1]")
    if temperature <= 0:
        raise ValueError(f"--temperature={temperature} must be positive")
    if hidden_weight < 0:
        raise ValueError(f"--hidden_weight={hidden_weight} must be >= 0")
    if attention_weight < 0:
        raise ValueError(f"--attention_weight={attention_weight} must be >= 0")


class Distiller(Float32Matmuls, keras.Model):
    """A student task model trained on `alpha * task loss + (1 - alpha) * T^2 * KL(teacher || student)`, plus
    `hidden_weight * MSE` between mapped hidden states and `attention_weight * MSE` between mapped layers' attention
    scores (TinyBERT) when those weights are positive.

    Calling the distiller runs the student alone (evaluation and prediction see the student); training runs the
    frozen teacher (inference mode, no dropout) on the same batch, or, when the batch's inputs carry
    `teacher_cache.TEACHER_LOGITS` (`--cache_teacher`, logits losses only), takes the teacher's logits from there.
    Soft targets cover every logits output of the task model: a classifier's classes, a tagger's labels per token
    (padding excluded), a span labeler's start and end positions; a regression score is matched by squared error.
    For the hidden-state loss, student layer i imitates teacher layer `layer_map[i]`, through a learned linear
    projection when the widths differ (TinyBERT). For the attention loss, student layer i's scores before the
    softmax imitate teacher layer `layer_map[i]`'s (the same number of heads); they are recomputed from each
    layer's input (its query and key projections again: an extra cost of about two projections and one score
    product per mapped layer on each side).

    Args:
        student: a task model (`TaskModel`) with `.encoder`; its `default_loss()` is the task loss.
        teacher: the trained task model of the same kind (frozen here).
        alpha: weight of the task loss; 1 - alpha weighs the soft-target loss.
        temperature: softmax temperature T of the soft targets.
        hidden_weight: weight of the hidden-state MSE (0: off).
        layer_map: teacher layer index of each student layer (needed when `hidden_weight` or `attention_weight`
            is positive).
        attention_weight: weight of the attention-score MSE (0: off).

    Examples:
    ```python
    distiller = Distiller(student, teacher, alpha=0.5, temperature=2.0)
    distiller.compile(optimizer="adam")
    distiller.fit(batches)  # (inputs, labels) as the student's own task
    student.save_weights("model.weights.h5")
    ```
    """

    def __init__(self, student, teacher, alpha=0.5, temperature=2.0, hidden_weight=0.0, layer_map=None,
                 attention_weight=0.0, **kwargs):
        super().__init__(**kwargs)
        check_settings(alpha, temperature, hidden_weight, attention_weight)
        self.student, self.teacher = student, teacher
        teacher.trainable = False
        self.alpha, self.temperature = alpha, temperature
        self.hidden_weight, self.attention_weight = hidden_weight, attention_weight
        self.projection = None
        self.uses_layers = hidden_weight > 0 or attention_weight > 0
        if self.uses_layers:
            if layer_map is None or len(layer_map) != student.encoder.config.num_hidden_layers:
                raise ValueError("the hidden-state and attention losses need a teacher layer for each student layer")
            self.layer_map = list(layer_map)
            self._student_features = _with_hidden_states(student)
            self._teacher_features = _with_hidden_states(teacher)
        if hidden_weight > 0:
            s_width, t_width = student.encoder.config.hidden_size, teacher.encoder.config.hidden_size
            if s_width != t_width:  # one projection shared by the layers, as TinyBERT's W_h
                self.projection = keras.layers.Dense(t_width, use_bias=True, name="hidden_projection")
                self.projection.build((None, None, s_width))
        if attention_weight > 0:
            self._attention_pairs = [(_attention_of_layer(student.encoder, i), _attention_of_layer(teacher.encoder, j))
                                     for i, j in enumerate(self.layer_map)]
            for i, (s, t) in enumerate(self._attention_pairs):
                if s.num_kept_heads != t.num_kept_heads:
                    raise ValueError(f"the attention loss needs as many heads on both sides: student layer {i} has "
                                     f"{s.num_kept_heads}, teacher layer {self.layer_map[i]} {t.num_kept_heads}")
        self.task_loss, self.task_loss_weights = student.default_loss(), student.default_loss_weights()
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.trackers = {name: keras.metrics.Mean(name=name)
                         for name in ("task_loss", "distill_loss", "hidden_loss", "attention_loss")}

    def call(self, inputs, training=False):
        inputs = {name: value for name, value in inputs.items() if name != TEACHER_LOGITS}
        if training and self.uses_layers:  # the logits and layer states of one pass, for compute_loss
            return self._student_features(inputs, training=True)
        return self.student(inputs, training=training)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The weighted sum of the losses, from the student's forward pass (`y_pred`: its outputs, or with the
        layer losses `{"logits", "embedding", "hidden"}`) and a teacher pass made here (or its cached logits in
        `x`; none at alpha 1 without layer losses); its matmuls as the models' calls (`float32_matmuls`)."""
        with float32_matmuls(self.compute_dtype):
            return self._weighted_losses(x, y, y_pred)

    def _weighted_losses(self, x, y, y_pred):
        """`compute_loss`'s weighted sum."""
        mask = x["input_mask"]  # (batch, seq)
        hidden = attention = ops.zeros(())
        if self.uses_layers:
            student, teacher = y_pred, self._teacher_features(x, training=False)
            y_pred, teacher_logits = student["logits"], teacher["logits"]
            for i, j in enumerate(self.layer_map):
                if self.hidden_weight > 0:
                    s = student["hidden"][i]  # (batch, seq, student hidden)
                    s = self.projection(s) if self.projection is not None else s  # (batch, seq, teacher hidden)
                    hidden = hidden + hidden_state_loss(s, teacher["hidden"][j], mask)
                if self.attention_weight > 0:
                    s_layer, t_layer = self._attention_pairs[i]
                    s_input = student["embedding"] if i == 0 else student["hidden"][i - 1]  # layer i's input
                    t_input = teacher["embedding"] if j == 0 else teacher["hidden"][j - 1]
                    t_scores = ops.stop_gradient(t_layer.attention_scores(t_input, mask))
                    attention = attention + attention_score_loss(s_layer.attention_scores(s_input, mask), t_scores,
                                                                 mask)
            hidden, attention = hidden / len(self.layer_map), attention / len(self.layer_map)
        elif TEACHER_LOGITS in x:
            teacher_logits = x[TEACHER_LOGITS]
        elif self.alpha < 1.0:  # (alpha 1, labels only: no teacher pass)
            teacher_logits = self.teacher(x, training=False)
        hard = task_loss(self.task_loss, self.task_loss_weights, y, y_pred)
        soft = ops.zeros(())
        if self.alpha < 1.0:
            teacher_logits = keras.tree.map_structure(ops.stop_gradient, teacher_logits)
            for s, t in output_pairs(y_pred, teacher_logits):
                soft = soft + logits_distillation_loss(s, t, self.temperature, mask if len(s.shape) == 3 else None)
        total = (self.alpha * hard + (1.0 - self.alpha) * soft + self.hidden_weight * hidden
                 + self.attention_weight * attention)
        self.loss_tracker.update_state(total)
        for name, value in (("task_loss", hard), ("distill_loss", soft), ("hidden_loss", hidden),
                            ("attention_loss", attention)):
            self.trackers[name].update_state(value)
        return total

    def _split_untrained(self, variables):
        """`(variables, less those the student leaves untrained, those)`: a sequence-output student (tagger, span
        labeler) lists its encoder's pooler as non-trainable (`SequenceOutputModel`), although the variables are
        marked trainable; the distiller trains what the student trains (and its projection)."""
        untrained = {id(v) for v in self.student.non_trainable_weights}
        return [v for v in variables if id(v) not in untrained], [v for v in variables if id(v) in untrained]

    @property
    def trainable_weights(self):
        return self._split_untrained(super().trainable_weights)[0]

    @property
    def non_trainable_weights(self):
        return super().non_trainable_weights + self._split_untrained(super().trainable_weights)[1]

    @property
    def trainable_variables(self):
        return self._split_untrained(super().trainable_variables)[0]

    @property
    def non_trainable_variables(self):
        return super().non_trainable_variables + self._split_untrained(super().trainable_variables)[1]

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return reducible_across_workers({m.name: m.result() for m in self.metrics})

    @property
    def metrics(self):
        return [self.loss_tracker, *self.trackers.values()]
