"""ALBERT's own checkpoint checks: the encoder inside a task checkpoint (the `albert.` prefix), the pre-training heads
(masked LM + sentence order), and Google's ALBERT names round-tripping. The encoder and the task heads of every family,
ALBERT's included, are checked in test_family_parity.py.

transformers' `AlbertModel`, `AlbertForSequenceClassification` and `AlbertForPreTraining` are built from one config
that exercises both of ALBERT's parameter reductions (embeddings of width E=16 projected to H=32; 4 layers sharing 2
groups of 2 blocks), with random weights (LayerNorms and biases too), saved with `save_pretrained` and loaded by us
without torch.
"""

import json

import numpy as np
import pytest

from official_bert import (BertConfig, BertEncoder, BertPretrainer)
from official_bert.checkpoints import (encoder_specs, head_specs, load_config, load_encoder, load_pretrainer_weights,
                                       open_checkpoint, save_pretrainer,
                                       write_google_checkpoint)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
VOCAB, SEQ = 99, 12
HF_CONFIG = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=4, num_hidden_groups=2,
                 inner_group_num=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=SEQ,
                 type_vocab_size=2, hidden_act="gelu_new", layer_norm_eps=1e-12, pad_token_id=0)
HEADS = ("Model", "ForSequenceClassification", "ForPreTraining")


def _hf_model(head, seed):
    num_labels = 3 if head == "ForSequenceClassification" else 2
    config = transformers.AlbertConfig(**HF_CONFIG, num_labels=num_labels, attn_implementation="eager")
    torch.manual_seed(seed)
    model = getattr(transformers, f"Albert{head}")(config).eval()
    with torch.no_grad():  # LayerNorm gains and every bias away from 1 and 0, so a misplaced one shows
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model


def _inputs(batch=2, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, VOCAB, size=(batch, SEQ)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0  # a padded row
    ids[mask == 0] = 0
    types = ((np.arange(SEQ)[None] >= 5) * mask).astype(np.int32)  # a second segment
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{head: (transformers model, saved directory)}."""
    root = tmp_path_factory.mktemp("albert")
    saved = {}
    for i, head in enumerate(HEADS):
        model = _hf_model(head, seed=i)
        model.save_pretrained(root / head)
        saved[head] = (model, root / head)
    return saved


def _torch(inputs):
    return dict(input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
                attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long))


def _close(ours, theirs):
    ours, theirs = np.asarray(ours), theirs.detach().numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=TOLERANCE, rtol=0)
    return float(np.abs(ours - theirs).max())


def test_config_reads_transformers_albert_config(models):
    config = load_config(open_checkpoint(str(models["Model"][1])))
    assert config.is_albert and config.hidden_act == "gelu_new"
    assert (config.embedding_size, config.num_hidden_groups, config.inner_group_num) == (16, 2, 2)


def test_encoder_inside_a_task_checkpoint_equals_transformers(models):
    """`AlbertForSequenceClassification`'s encoder weights carry the `albert.` prefix."""
    reference, directory = models["ForSequenceClassification"]
    encoder, config = load_encoder(str(directory))
    assert len(encoder.transformer_layers) == 4  # 2 groups x 2 blocks, shared by the 4 layers
    inputs = _inputs()
    outputs = encoder(inputs)
    assert len(outputs["encoder_outputs"]) == config.num_hidden_layers
    with torch.no_grad():
        expected = reference.albert(**_torch(inputs), output_hidden_states=True)
    _close(outputs["sequence_output"], expected.last_hidden_state)
    _close(outputs["pooled_output"], expected.pooler_output)
    _close(outputs["embedding_output"], expected.hidden_states[0])  # after the E -> H projection


def _all_positions():
    return np.tile(np.arange(SEQ, dtype=np.int32), (2, 1))


def test_pretraining_heads_equal_transformers_and_save_back(models, tmp_path):
    reference, directory = models["ForPreTraining"]
    pretrainer = BertPretrainer(BertEncoder(load_config(open_checkpoint(str(directory)))), objective="mlm_sop")
    assert load_pretrainer_weights(pretrainer, str(directory)) == {"masked_lm": True, "next_sentence": True}
    inputs = _inputs()
    ours = pretrainer({**inputs, "masked_lm_positions": _all_positions()})
    with torch.no_grad():
        expected = reference(**_torch(inputs))
    _close(ours["mlm_logits"], expected.prediction_logits)
    _close(ours["nsp_logits"], expected.sop_logits)

    save_pretrainer(pretrainer, str(tmp_path / "ours"))
    reloaded = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "ours"),
                                                                 attn_implementation="eager").eval()
    with torch.no_grad():
        again = reloaded(**_torch(inputs))
    _close(ours["mlm_logits"], again.prediction_logits)
    _close(ours["nsp_logits"], again.sop_logits)


# Google's original ALBERT names (google-research/albert modeling.py; transformers' `load_tf_weights_in_albert`).
GOOGLE_NAMES = [
    "bert/embeddings/word_embeddings", "bert/embeddings/position_embeddings", "bert/embeddings/token_type_embeddings",
    "bert/embeddings/LayerNorm/gamma", "bert/encoder/embedding_hidden_mapping_in/kernel",
    "bert/encoder/transformer/group_1/inner_group_1/attention_1/self/query/kernel",
    "bert/encoder/transformer/group_0/inner_group_0/attention_1/output/dense/bias",
    "bert/encoder/transformer/group_0/inner_group_1/LayerNorm/beta",
    "bert/encoder/transformer/group_1/inner_group_0/ffn_1/intermediate/dense/kernel",
    "bert/encoder/transformer/group_1/inner_group_0/ffn_1/intermediate/output/dense/kernel",
    "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma", "bert/pooler/dense/kernel",
    "cls/predictions/transform/dense/kernel", "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/output_bias", "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias",
]


def test_google_names_round_trip(models, tmp_path):
    _, directory = models["ForPreTraining"]
    pretrainer = BertPretrainer(BertEncoder(load_config(open_checkpoint(str(directory)))), objective="mlm_sop")
    load_pretrainer_weights(pretrainer, str(directory))
    specs = encoder_specs(pretrainer.encoder) + head_specs(pretrainer)
    tensors = {spec.google_name: spec.to_stored_value("google") for spec in specs}
    assert set(GOOGLE_NAMES) <= set(tensors)
    assert tensors["cls/seq_relationship/output_weights"].shape == (2, 32)  # [classes, hidden], as Google stores it
    assert tensors["bert/encoder/embedding_hidden_mapping_in/kernel"].shape == (16, 32)  # [in, out]
    google = tmp_path / "albert_base"
    write_google_checkpoint(tensors, str(google / "model.ckpt-best"))
    config = pretrainer.encoder.config
    google_config = {k: v for k, v in config.to_dict().items()
                     if k not in ("model_type", "pad_token_id", "classifier_dropout_prob")}
    (google / "albert_config.json").write_text(json.dumps({**google_config, "hidden_act": "gelu",  # Google's tanh
                                                           "net_structure_type": 0, "down_scale_factor": 1}))

    encoder, read = load_encoder(str(google))
    assert read == config  # Google's "gelu" read as the tanh form it is
    for ours, theirs in zip(encoder.weights, pretrainer.encoder.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    again = BertPretrainer(BertEncoder(read), objective="mlm_sop")
    assert load_pretrainer_weights(again, str(google)) == {"masked_lm": True, "next_sentence": True}
    for ours, theirs in zip(again.weights, pretrainer.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_wrong_shapes_name_the_variable(models):
    _, directory = models["Model"]
    config = load_config(open_checkpoint(str(directory)))
    wrong = BertConfig.from_dict({**config.to_dict(), "embedding_size": 8})
    with pytest.raises(ValueError,
                       match=r"embeddings.word_embeddings.weight' has shape \(99, 16\), expected \(99, 8\)"):
        load_encoder(str(directory), config=wrong)


def test_other_family_configs_do_not_load_albert_weights(models):
    _, directory = models["Model"]
    bert = BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=4, num_attention_heads=4,
                      intermediate_size=37, max_position_embeddings=SEQ)  # BERT with ALBERT's embedding shapes
    with pytest.raises(ValueError, match="missing from the checkpoint.*encoder.layer.0.attention.self.query.weight"):
        load_encoder(str(directory), config=bert)
    more_groups = BertConfig.from_dict({**load_config(open_checkpoint(str(directory))).to_dict(),
                                        "num_hidden_groups": 4})
    with pytest.raises(ValueError, match="albert_layer_groups.2"):
        load_encoder(str(directory), config=more_groups)
