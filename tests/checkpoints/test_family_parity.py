"""RoBERTa, XLM-RoBERTa, DistilBERT and ALBERT: our encoder and every task head equal transformers' on tiny random
models (ALBERT's own checks, its pre-training heads and Google's names, are in test_albert_parity.py).

Each family's transformers models (`*Model`, `*ForSequenceClassification`, `*ForTokenClassification`,
`*ForQuestionAnswering`, `*ForMultipleChoice`, `*ForMaskedLM`) are built from one seeded config with random
weights (LayerNorm and biases too), saved with `save_pretrained` and loaded by us without torch.
"""

import json

import numpy as np
import pytest

from official_bert import (BertClassifier, BertEncoder, BertMultipleChoice, BertPretrainer, BertSpanLabeler,
                           BertTokenClassifier)
from official_bert.checkpoints import (head_specs, load_config, load_encoder, load_pretrainer_weights,
                                       load_task_weights, open_checkpoint, save_encoder, save_pretrainer,
                                       save_task_model)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
VOCAB, SEQ = 99, 12
FAMILIES = {
    "roberta": dict(cls="Roberta", config=dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                  num_attention_heads=4, intermediate_size=37,
                                                  max_position_embeddings=SEQ + 2, type_vocab_size=1,
                                                  layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                                                  eos_token_id=2)),
    "xlm-roberta": dict(cls="XLMRoberta", config=dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                         num_attention_heads=4, intermediate_size=37,
                                                         max_position_embeddings=SEQ + 2, type_vocab_size=1,
                                                         layer_norm_eps=1e-5, pad_token_id=1)),
    "distilbert": dict(cls="DistilBert", config=dict(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4,
                                                        hidden_dim=37, max_position_embeddings=SEQ,
                                                        activation="gelu", pad_token_id=0)),
    # both of ALBERT's reductions: embeddings of width 16 projected to 32; 4 layers sharing 2 groups of 2 blocks
    "albert": dict(cls="Albert", segments=True, config=dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32,
                                                             num_hidden_layers=4, num_hidden_groups=2,
                                                             inner_group_num=2, num_attention_heads=4,
                                                             intermediate_size=37, max_position_embeddings=SEQ,
                                                             hidden_act="gelu_new", pad_token_id=0)),
}
HEADS = ("Model", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering",
         "ForMultipleChoice", "ForMaskedLM")


def _hf_model(family, head, seed):
    spec = FAMILIES[family]
    config = getattr(transformers, f"{spec['cls']}Config")(
        **spec["config"], num_labels=2 if head == "ForQuestionAnswering" else 3, attn_implementation="eager")
    torch.manual_seed(seed)
    model = getattr(transformers, f"{spec['cls']}{head}")(config).eval()
    with torch.no_grad():  # LayerNorm gains and every bias away from 1 and 0, so a misplaced one shows
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model


def _inputs(pad_id, segments=False, batch=2, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, VOCAB, size=(batch, SEQ)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0  # a padded row
    ids[mask == 0] = pad_id
    types = ((np.arange(SEQ)[None] >= 5) * mask).astype(np.int32) if segments else np.zeros_like(ids)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, tmp_path_factory):
    """(family name, {head: (transformers model, saved directory)}, our inputs)."""
    name = request.param
    root = tmp_path_factory.mktemp(name.replace("-", "_"))
    models = {}
    for i, head in enumerate(HEADS):
        model = _hf_model(name, head, seed=i)
        model.save_pretrained(root / head)
        models[head] = (model, root / head)
    return name, models, _inputs(FAMILIES[name]["config"]["pad_token_id"], FAMILIES[name].get("segments", False))


def _torch(inputs):
    tensors = dict(input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
                   attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long))
    if inputs["input_type_ids"].any():  # two segments (the families with token types)
        tensors["token_type_ids"] = torch.tensor(inputs["input_type_ids"], dtype=torch.long)
    return tensors


def _close(ours, theirs):
    ours, theirs = np.asarray(ours), theirs.detach().numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=TOLERANCE, rtol=0)


@pytest.mark.slow
def test_encoder_equals_transformers_and_saves_back(family, tmp_path):
    name, models, inputs = family
    reference, directory = models["Model"]
    encoder, config = load_encoder(str(directory))
    assert config.model_type == name
    outputs = encoder(inputs)
    with torch.no_grad():
        expected = reference(**_torch(inputs))
    _close(outputs["sequence_output"], expected.last_hidden_state)
    if name == "distilbert":  # no pooler: the first token
        assert encoder.pooler is None
        _close(outputs["pooled_output"], expected.last_hidden_state[:, 0])
    else:
        _close(outputs["pooled_output"], expected.pooler_output)

    save_encoder(encoder, str(tmp_path / "ours"))
    reloaded = transformers.AutoModel.from_pretrained(str(tmp_path / "ours"), attn_implementation="eager").eval()
    assert type(reloaded) is type(reference)
    with torch.no_grad():
        _close(outputs["sequence_output"], reloaded(**_torch(inputs)).last_hidden_state)


@pytest.mark.parametrize("head,build", [
    ("ForSequenceClassification", lambda encoder: BertClassifier(encoder, num_classes=3)),
    ("ForTokenClassification", lambda encoder: BertTokenClassifier(encoder, num_labels=3)),
    ("ForQuestionAnswering", lambda encoder: BertSpanLabeler(encoder)),
])
def test_task_heads_equal_transformers_and_save_back(family, head, build, tmp_path):
    name, models, inputs = family
    reference, directory = models[head]
    model = build(BertEncoder(load_config(open_checkpoint(str(directory)))))
    assert load_task_weights(model.encoder, head_specs(model), str(directory), optional_pooler=True)
    with torch.no_grad():
        expected = reference(**_torch(inputs))
    _close_task_outputs(model(inputs), expected, head)

    reloaded = _saved_back(model, tmp_path, f"AutoModel{head}", type(reference))
    with torch.no_grad():
        _close_task_outputs(model(inputs), reloaded(**_torch(inputs)), head)


def _close_task_outputs(ours, theirs, head):
    if head == "ForQuestionAnswering":
        _close(ours["start_logits"], theirs.start_logits)
        _close(ours["end_logits"], theirs.end_logits)
    else:
        _close(ours, theirs.logits)


def _saved_back(model, tmp_path, auto_class, reference_class):
    """`save_task_model(model)` loaded by transformers' `auto_class`: of `reference_class`, every weight used."""
    save_task_model(model, str(tmp_path / "ours"))
    reloaded, info = getattr(transformers, auto_class).from_pretrained(
        str(tmp_path / "ours"), attn_implementation="eager", output_loading_info=True)
    assert type(reloaded) is reference_class
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    return reloaded.eval()


def test_multiple_choice_head_equals_transformers_and_saves_back(family, tmp_path):
    name, models, inputs = family
    reference, directory = models["ForMultipleChoice"]
    model = BertMultipleChoice(BertEncoder(load_config(open_checkpoint(str(directory)))))
    assert load_task_weights(model.encoder, head_specs(model), str(directory))
    choices = {k: np.stack([v, v[::-1]], axis=0) for k, v in inputs.items()}  # (2 questions, 2 choices, seq)
    flat = _torch({k: v.reshape(4, SEQ) for k, v in choices.items()})
    torch_choices = {k: v.reshape(2, 2, SEQ) for k, v in flat.items()}
    for transformers_model in (reference, _saved_back(model, tmp_path, "AutoModelForMultipleChoice", type(reference))):
        with torch.no_grad():
            _close(model(choices), transformers_model(**torch_choices).logits)


def test_masked_lm_head_equals_transformers_and_saves_back(family, tmp_path):
    name, models, inputs = family
    reference, directory = models["ForMaskedLM"]
    pretrainer = BertPretrainer(BertEncoder(load_config(open_checkpoint(str(directory)))))
    loaded = load_pretrainer_weights(pretrainer, str(directory))
    assert loaded == {"masked_lm": True, "next_sentence": False}
    positions = np.tile(np.arange(SEQ, dtype=np.int32), (2, 1))
    ours = pretrainer({**inputs, "masked_lm_positions": positions})["mlm_logits"]
    with torch.no_grad():
        expected = reference(**_torch(inputs)).logits
    _close(ours, expected)

    save_pretrainer(pretrainer, str(tmp_path / "ours"))
    reloaded, info = transformers.AutoModelForMaskedLM.from_pretrained(
        str(tmp_path / "ours"), attn_implementation="eager", output_loading_info=True)
    # ALBERT's pre-trainer has its sentence-order head (fresh here), so it is written as AlbertForPreTraining, whose
    # pooler and head a masked LM leaves unused; the other families' masked LMs are written without a pooler
    architecture = json.loads((tmp_path / "ours" / "config.json").read_text())["architectures"]
    unused = {"albert.pooler.weight", "albert.pooler.bias", "sop_classifier.classifier.weight",
              "sop_classifier.classifier.bias"} if architecture == ["AlbertForPreTraining"] else set()
    assert not info["missing_keys"] and info["unexpected_keys"] == unused, info
    with torch.no_grad():
        _close(ours, reloaded.eval()(**_torch(inputs)).logits)


@pytest.mark.parametrize("model_type", ["gpt2", "electra"])
def test_a_checkpoint_of_another_family_is_an_error_naming_it(tmp_path, model_type):
    from safetensors.numpy import save_file

    save_file({"wte.weight": np.zeros((4, 4), np.float32)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, "n_embd": 4}))
    with pytest.raises(ValueError, match=f"config.json.*'{model_type}'.*not supported"):
        load_encoder(str(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["roberta", "xlm-roberta"])
def test_a_config_json_without_pad_token_id_loads_with_the_familys_default(name, tmp_path):
    """transformers' RobertaConfig / XLMRobertaConfig default pad_token_id to 1 (position ids start after it): a
    config.json without it is read so here too, and the encoder equals AutoModel's on that same directory."""
    _hf_model(name, "Model", seed=0).save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    values = json.loads(path.read_text())
    del values["pad_token_id"]
    path.write_text(json.dumps(values))
    reference = transformers.AutoModel.from_pretrained(str(tmp_path), attn_implementation="eager").eval()
    assert reference.config.pad_token_id == 1
    encoder, config = load_encoder(str(tmp_path))
    assert config.pad_token_id == 1
    inputs = _inputs(1)
    with torch.no_grad():
        _close(encoder(inputs)["sequence_output"], reference(**_torch(inputs)).last_hidden_state)
