"""Head-pruned checkpoints in transformers' format.

transformers 4.x `prune_heads({0: [0, 2], 1: [1]})` slices each layer's `query/key/value.weight` to
`(kept * head_size, hidden)` (rows of the kept heads, ascending), `output.dense.weight` to `(hidden, kept * head_size)`
and records `pruned_heads` in `config.json`; `from_pretrained` rebuilds those shapes from it. transformers 5 dropped
head pruning (no `prune_heads`, no `pruned_heads`), so these tests write and read that format themselves and compare
with the unpruned transformers model whose removed heads' output-projection columns are zero, which computes the
same function (a removed head adds nothing to the attention output).
"""

import json

import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder
from official_bert.checkpoints import load_encoder, save_encoder

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

TOLERANCE = 1e-5
VOCAB, SEQ, HIDDEN, HEADS = 99, 12, 32, 4
HEAD_SIZE = HIDDEN // HEADS
PRUNED = {0: [0, 2], 1: [1]}
# family -> (transformers classes, config values, weight names: (query, key, value, output), layer prefix)
FAMILIES = {
    "bert": ("BertConfig", "BertModel", dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2,
                                             num_attention_heads=HEADS, intermediate_size=37,
                                             max_position_embeddings=SEQ),
             ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"),
             "encoder.layer"),
    "distilbert": ("DistilBertConfig", "DistilBertModel", dict(vocab_size=VOCAB, dim=HIDDEN, n_layers=2,
                                                               n_heads=HEADS, hidden_dim=37,
                                                               max_position_embeddings=SEQ, activation="gelu"),
                   ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"),
                   "transformer.layer"),
}


def _kept_rows(heads):
    """Row indices (in the unpruned `(heads * head_size, ...)` layout) of the heads not in `heads`."""
    return np.concatenate([np.arange(h * HEAD_SIZE, (h + 1) * HEAD_SIZE) for h in range(HEADS) if h not in heads])


def _hf_model(family, seed=0):
    config_cls, model_cls, values, _, _ = FAMILIES[family]
    config = getattr(transformers, config_cls)(**values, attn_implementation="eager")
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config).eval()
    with torch.no_grad():  # biases and LayerNorms away from 0 and 1, so a misplaced one shows
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model


def _zero_removed_heads(model, family):
    """The unpruned model computing what the pruned one does: removed heads' output-projection columns set to 0."""
    _, _, _, names, layers = FAMILIES[family]
    state = model.state_dict()
    with torch.no_grad():
        for layer, heads in PRUNED.items():
            weight = state[f"{layers}.{layer}.{names[3]}.weight"]  # (hidden, heads * head_size)
            for h in heads:
                weight[:, h * HEAD_SIZE:(h + 1) * HEAD_SIZE] = 0.0
    return model


def _write_pruned_checkpoint(model, family, path):
    """What transformers 4.x `prune_heads(PRUNED)` + `save_pretrained` writes (`prune_linear_layer` of q/k/v on dim
    0, of the output projection on dim 1)."""
    _, _, _, names, layers = FAMILIES[family]
    tensors = {name: value.numpy().copy() for name, value in model.state_dict().items()}
    for layer, heads in PRUNED.items():
        rows = _kept_rows(heads)
        for name in names[:3]:
            for leaf in ("weight", "bias"):
                key = f"{layers}.{layer}.{name}.{leaf}"
                tensors[key] = np.ascontiguousarray(tensors[key][rows])
        key = f"{layers}.{layer}.{names[3]}.weight"
        tensors[key] = np.ascontiguousarray(tensors[key][:, rows])
    path.mkdir(exist_ok=True)
    safetensors_numpy.save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config["pruned_heads"] = {str(k): v for k, v in PRUNED.items()}
    (path / "config.json").write_text(json.dumps(config))


def _unprune(tensors, family, pruned):
    """A pruned checkpoint's tensors in the unpruned shapes, zeros in the removed heads' rows / columns."""
    _, _, _, names, layers = FAMILIES[family]
    tensors = dict(tensors)
    for layer, heads in pruned.items():
        rows = _kept_rows(heads)
        for name in names[:3]:
            for leaf in ("weight", "bias"):
                key = f"{layers}.{layer}.{name}.{leaf}"
                full = np.zeros((HEADS * HEAD_SIZE,) + tensors[key].shape[1:], np.float32)
                full[rows] = tensors[key]
                tensors[key] = full
        key = f"{layers}.{layer}.{names[3]}.weight"
        full = np.zeros((HIDDEN, HEADS * HEAD_SIZE), np.float32)
        full[:, rows] = tensors[key]
        tensors[key] = full
    return tensors


def _inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(3, VOCAB, size=(2, SEQ)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    ids[mask == 0] = 0
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


def _hf_sequence_output(model, inputs):
    kwargs = dict(input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long))
    if not isinstance(model, transformers.DistilBertModel):
        kwargs["token_type_ids"] = torch.tensor(inputs["input_type_ids"], dtype=torch.long)
    with torch.no_grad():
        return model(**kwargs).last_hidden_state.numpy()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_transformers_pruned_checkpoint_loads_with_equal_outputs(tmp_path, family):
    model = _hf_model(family)
    _write_pruned_checkpoint(model, family, tmp_path)
    encoder, config = load_encoder(str(tmp_path))
    assert config.pruned_heads == PRUNED
    attention = encoder.transformer_layers[0].attention
    assert tuple(attention.query.kernel.shape) == (HIDDEN, 2, HEAD_SIZE)
    assert tuple(attention.output_dense.kernel.shape) == (2, HEAD_SIZE, HIDDEN)
    assert tuple(encoder.transformer_layers[1].attention.query.kernel.shape) == (HIDDEN, 3, HEAD_SIZE)
    inputs = _inputs()
    np.testing.assert_allclose(np.asarray(encoder(inputs)["sequence_output"]),
                               _hf_sequence_output(_zero_removed_heads(model, family), inputs), atol=TOLERANCE)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_our_pruned_encoder_saves_in_transformers_format(tmp_path, family):
    values = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS,
                  intermediate_size=37, max_position_embeddings=SEQ, pruned_heads={"0": [2, 0], "1": [1]})
    if family == "distilbert":
        values.update(model_type="distilbert", type_vocab_size=0)
    encoder = BertEncoder(BertConfig.from_dict(values))
    rng = np.random.default_rng(1)
    for variable in encoder.weights:
        variable.assign(variable.numpy() + 0.05 * rng.standard_normal(variable.shape).astype("float32"))
    save_encoder(encoder, str(tmp_path))
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["pruned_heads"] == {"0": [0, 2], "1": [1]}  # what transformers 4.x from_pretrained prunes by
    _, _, _, names, layers = FAMILIES[family]
    tensors = safetensors_numpy.load_file(str(tmp_path / "model.safetensors"))
    assert tensors[f"{layers}.0.{names[0]}.weight"].shape == (2 * HEAD_SIZE, HIDDEN)
    assert tensors[f"{layers}.0.{names[3]}.weight"].shape == (HIDDEN, 2 * HEAD_SIZE)
    assert tensors[f"{layers}.1.{names[1]}.bias"].shape == (3 * HEAD_SIZE,)
    # transformers 5 cannot build the pruned shapes: load the weights unpruned, removed heads zero
    hf = _hf_model(family)
    result = hf.load_state_dict({k: torch.from_numpy(v) for k, v in _unprune(tensors, family, PRUNED).items()},
                                strict=False)
    assert not result.unexpected_keys and not [k for k in result.missing_keys if "position_ids" not in k]
    inputs = _inputs()
    np.testing.assert_allclose(np.asarray(encoder(inputs)["sequence_output"]), _hf_sequence_output(hf, inputs),
                               atol=TOLERANCE)
