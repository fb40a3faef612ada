"""On Keras' JAX backend a float32 model's matmuls, forward and gradient, are at full float32 precision
(`official_bert.models.matmul_precision`); mixed precision and the user's own setting are left as they are.

Read from what Keras' JAX trainer compiles: the jaxpr of `model.train_step` (loss, gradients and the AdamW update),
every `dot_general` in it and in the jaxprs nested in it. JAX's CPU backend computes float32 matmuls in float32 at
any precision, so the values here would not show it; a GPU runs the default precision in TensorFloat-32.
"""

import inspect

import pytest

from tests.models.test_other_backends import run_on_backend

pytestmark = pytest.mark.slow

_SCRIPT = """
import contextlib, json
import jax, keras, numpy as np
from official_bert import BertConfig, BertEncoder
from official_bert.models.classifier import BertClassifier
from official_bert.models.pretrainer import BertPretrainer
from official_bert.optimization import create_optimizer


def dot_precisions(closed_jaxpr):
    found = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                found.append(str(eqn.params["precision"]))
            for value in eqn.params.values():  # the jaxprs of scans, conds, custom gradients, pjits
                for inner in value if isinstance(value, (list, tuple)) else [value]:
                    inner = getattr(inner, "jaxpr", inner)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(closed_jaxpr.jaxpr)
    return found


def train_step_precisions(kind, policy, user_precision=None):
    keras.config.set_dtype_policy(policy)
    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    inputs = {"input_word_ids": np.ones((2, 8), "int32"), "input_mask": np.ones((2, 8), "int32"),
              "input_type_ids": np.zeros((2, 8), "int32")}
    if kind == "classifier":
        model, labels = BertClassifier(BertEncoder(config), 2), np.array([0, 1])
    else:
        model = BertPretrainer(BertEncoder(config))
        inputs["masked_lm_positions"] = np.array([[1, 2], [3, 4]], "int32")
        labels = {"masked_lm_ids": np.array([[5, 6], [7, 8]], "int32"),
                  "masked_lm_weights": np.ones((2, 2), "float32"), "next_sentence_labels": np.array([0, 1])}
    model.compile(optimizer=create_optimizer(1e-3, 10, 1))
    model.optimizer.build(model.trainable_variables)
    state = tuple([v.value for v in variables] for variables in (
        model.trainable_variables, model.non_trainable_variables, model.optimizer.variables, model.metrics_variables))
    with jax.default_matmul_precision(user_precision) if user_precision else contextlib.nullcontext():
        precisions = dot_precisions(jax.make_jaxpr(model.train_step)(state, (inputs, labels)))
    keras.config.set_dtype_policy("float32")
    return {"dots": len(precisions), "precisions": sorted(set(precisions))}


print(json.dumps({"backend": keras.backend.backend(),
                  "classifier_float32": train_step_precisions("classifier", "float32"),
                  "pretrainer_float32": train_step_precisions("pretrainer", "float32"),
                  "classifier_mixed_bfloat16": train_step_precisions("classifier", "mixed_bfloat16"),
                  "classifier_float32_user_tf32": train_step_precisions("classifier", "float32", "tensorfloat32")}))
"""


@pytest.fixture(scope="module")
def precisions():
    return run_on_backend("jax", _SCRIPT)[0]


@pytest.mark.parametrize("model", ["classifier", "pretrainer"])
def test_float32_train_step_matmuls_and_their_gradients_are_at_highest_precision(precisions, model):
    assert precisions["backend"] == "jax"
    result = precisions[f"{model}_float32"]
    assert result["dots"] >= 12  # the layer's projections, attention, FFN and heads, forward and backward
    assert result["precisions"] == ["(Precision.HIGHEST, Precision.HIGHEST)"]


def test_mixed_precision_keeps_jaxs_default(precisions):
    result = precisions["classifier_mixed_bfloat16"]
    assert result["dots"] >= 12 and result["precisions"] == ["None"]


def test_the_users_own_matmul_precision_is_kept(precisions):
    """`jax.default_matmul_precision("tensorfloat32")` around the step: what JAX gives for it (HIGH), not ours."""
    result = precisions["classifier_float32_user_tf32"]
    assert result["dots"] >= 12 and result["precisions"] == ["(Precision.HIGH, Precision.HIGH)"]


def test_the_models_calls_keep_keras_training_and_mask_arguments():
    """Keras passes `training` (and a mask) only to a `call` that names them; the mixin's `call` must."""
    from official_bert import BertConfig, BertEncoder
    from official_bert.models.multiple_choice import BertMultipleChoice
    from official_bert.models.pretrainer import BertPretrainer

    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    for model in (BertPretrainer(BertEncoder(config)), BertMultipleChoice(BertEncoder(config)), BertEncoder(config)):
        assert {"inputs", "training", "mask"} <= set(inspect.signature(model.call).parameters), type(model).__name__
