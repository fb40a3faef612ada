"""BertConfig: the hyper-parameters of a BERT-family encoder (BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ALBERT).

One flat dataclass. Defaults are BERT-Base uncased. Reads Google's `bert_config.json`, Hugging Face's
`config.json` (its `model_type` picks the family; a checkpoint directory's is read by `official_bert.hf_config`,
which tells the family from the files beside it when `model_type` is missing) and the named presets in the top-level
`configs/` package.
"""

import dataclasses
import json
import os
from typing import Optional

from official_bert.families import families, family_of, model_types
from official_bert.pruned_heads import check_pruned_heads, normalise_pruned_heads

# Activations a BERT config may name, mapped to the form we compute.
#   "gelu": exact erf GELU (Google BERT, HF "gelu", PyTorch default).
#   "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast": the tanh approximation.
KNOWN_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish", "tanh")

# Hugging Face config keys that change the architecture away from BERT; anything else not a field is
# metadata (architectures, torch_dtype, ...) and is ignored.
_HF_ARCHITECTURE_KEYS = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False}

# Integer fields that are 0 in valid configs: DistilBERT has no token types; BERT's [PAD] is id 0 (`pad_token_id` is
# typed Optional, None until the family resolves it).
_NON_NEGATIVE_FIELDS = ("type_vocab_size", "pad_token_id")
# Dropouts before task heads that only some families' configs hold (None elsewhere).
_HEAD_DROPOUT_FIELDS = ("classifier_dropout_prob", "qa_dropout_prob")


def read_config_json(path):
    """The values of a model config file (JSON).

    Raises:
        FileNotFoundError: no such file; ValueError: not valid JSON (the message names the file).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"BERT config file not found: {path}")
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None


@dataclasses.dataclass
class BertConfig:
    """Hyper-parameters of a BERT encoder (defaults: BERT-Base uncased).

    Args:
        vocab_size: number of word-piece ids.
        hidden_size: width H of every layer.
        num_hidden_layers: number of transformer blocks L.
        num_attention_heads: heads A per block; `hidden_size` must be divisible by it.
        intermediate_size: width of the feed-forward inner layer (4H in BERT).
        hidden_act: feed-forward activation, one of `KNOWN_ACTIVATIONS`.
        hidden_dropout_prob: dropout on embeddings and every residual branch.
        attention_probs_dropout_prob: dropout on attention probabilities.
        max_position_embeddings: longest sequence the position table covers.
        type_vocab_size: number of segment (token type) ids.
        initializer_range: stddev of the truncated-normal weight initializer.
        layer_norm_eps: LayerNorm epsilon (1e-12 in BERT and DistilBERT, 1e-5 in RoBERTa).
        model_type: the family (Hugging Face's `model_type`), one of `families.model_types()`; its spec is
            `family`.
        pad_token_id: the padding id (1 in RoBERTa, whose position ids start after it; 0 in BERT); None (the
            default): the family's, as its transformers config class has it (RoBERTa's and XLM-RoBERTa's 1, else 0),
            so that `BertConfig(model_type="roberta", ...)` counts positions as `RobertaConfig(...)` does.
        embedding_size: ALBERT's embedding width E, projected to `hidden_size` before the first block; None: the
            hidden size. Other families have embeddings of width `hidden_size` and leave it None.
        num_hidden_groups: ALBERT: how many distinct sets of transformer weights; layer i uses group
            `int(i / (num_hidden_layers / num_hidden_groups))`, as transformers' `AlbertTransformer`. 1 elsewhere.
        inner_group_num: ALBERT: transformer blocks per group, run one after the other in every layer. 1 elsewhere.
        classifier_dropout_prob: dropout before the classification and multiple-choice heads (transformers'
            `classifier_dropout` of BERT and RoBERTa, `AlbertConfig.classifier_dropout_prob`,
            `DistilBertConfig.seq_classif_dropout`); the token classifier drops at it too (ALBERT's sentence-order
            head as well), except where transformers' head drops at `hidden_dropout_prob` (`task_head_dropout`:
            DistilBERT's token classifier, RoBERTa's multiple-choice head). None (the default):
            the family's transformers default (0.1 in ALBERT, 0.2 in DistilBERT; None in BERT and RoBERTa, whose heads
            then drop at `hidden_dropout_prob`).
        qa_dropout_prob: DistilBERT: dropout before the question-answering head (transformers' `qa_dropout`); None
            (the default): its transformers default, 0.1. None elsewhere (that head has no dropout, as in
            transformers and Google's `run_squad.py`).
        pruned_heads: attention heads removed, as transformers' `PretrainedConfig.pruned_heads`: layer index -> sorted
            list of the removed heads' original indices (JSON's string keys are read as ints). Each layer keeps at
            least one head; a layer's kept heads keep their order and `head_size` stays
            `hidden_size // num_attention_heads`. Empty (the default) in an unpruned model; ALBERT has none (its layers
            share blocks).

    A BERT config's `to_dict()` is Google's `bert_config.json` (no `model_type`, `pad_token_id`); only an ALBERT
    config's holds `embedding_size`, `num_hidden_groups`, `inner_group_num`, only a config whose head dropouts are
    set (ALBERT's and DistilBERT's always) holds `classifier_dropout_prob` / `qa_dropout_prob`, and only a
    head-pruned config's `pruned_heads`.
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    model_type: str = "bert"
    pad_token_id: Optional[int] = None  # None: the family's (`_resolve_family_defaults`)
    embedding_size: Optional[int] = None
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    classifier_dropout_prob: Optional[float] = None
    qa_dropout_prob: Optional[float] = None
    pruned_heads: dict = dataclasses.field(default_factory=dict)  # layer -> sorted removed heads

    def __post_init__(self):
        self._resolve_family_defaults()
        self.pruned_heads = normalise_pruned_heads(self.pruned_heads, "BertConfig")
        self.validate()

    def _resolve_family_defaults(self):
        """Fills the fields left None that take the family's value: `pad_token_id` and the family's head dropouts
        (`classifier_dropout_prob`, `qa_dropout_prob`), as its transformers config class has them, and ALBERT's
        `embedding_size` (the hidden size). An unknown `model_type` is left to `validate`."""
        if self.model_type not in model_types():
            return
        if self.pad_token_id is None:
            self.pad_token_id = self.family.hf_defaults.get("pad_token_id", 0)
        for name in _HEAD_DROPOUT_FIELDS:
            if getattr(self, name) is None and name in self.family.hf_extra_fields:
                setattr(self, name, self.family.hf_defaults.get(name))
        if self.embedding_size is None and self.family.shared_layers:
            self.embedding_size = self.hidden_size

    @property
    def family(self):
        """The family's `families.ModelFamily` spec (of `model_type`)."""
        return family_of(self.model_type)

    @property
    def is_albert(self) -> bool:
        """ALBERT-like: factorised embeddings (`embedding_size`) and transformer weights shared across layers."""
        return self.family.shared_layers

    @property
    def packing_layout(self) -> str:
        """How the family packs its inputs (`BertPackInputs`' layout): "roberta" (`<s> A </s></s> B </s>`, one token
        type) or "bert" (`[CLS] A [SEP] B [SEP]`; DistilBERT and ALBERT too)."""
        return self.family.packing_layout

    @property
    def tokenizer_kind(self) -> str:
        """The tokenizer the family reads, of `tokenizer_kinds.TOKENIZER_KINDS`."""
        return self.family.tokenizer_kind

    @property
    def embedding_width(self) -> int:
        """The width of the embedding tables: `embedding_size` (ALBERT's E), else `hidden_size`."""
        return self.embedding_size if self.embedding_size is not None else self.hidden_size

    @property
    def head_dropout_prob(self) -> float:
        """Dropout before a classification head (and ALBERT's sentence-order head): `classifier_dropout_prob` when
        set, else `hidden_dropout_prob`."""
        return self.hidden_dropout_prob if self.classifier_dropout_prob is None else self.classifier_dropout_prob

    def task_head_dropout(self, head: str) -> float:
        """Dropout before a task head, as transformers' head of the family drops: `head_dropout_prob`, or
        `hidden_dropout_prob` for the family's `heads_at_hidden_dropout`.

        Args:
            head: "classifier", "tagger" or "multiple_choice".
        """
        return self.hidden_dropout_prob if head in self.family.heads_at_hidden_dropout else self.head_dropout_prob

    def layer_group(self, layer: int) -> int:
        """The weight group layer `layer` runs (ALBERT's sharing; `layer` itself elsewhere, one block a layer)."""
        if not self.family.shared_layers:
            return layer
        return int(layer / (self.num_hidden_layers / self.num_hidden_groups))  # transformers' AlbertTransformer

    def num_kept_heads(self, layer: int) -> int:
        """The attention heads layer `layer` keeps: `num_attention_heads` less its `pruned_heads`."""
        return self.num_attention_heads - len(self.pruned_heads.get(layer, ()))

    def kept_heads(self, layer: int) -> list:
        """The original indices of the heads layer `layer` keeps, ascending (the order of its kernels' head axis)."""
        removed = set(self.pruned_heads.get(layer, ()))
        return [h for h in range(self.num_attention_heads) if h not in removed]

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def max_sequence_length(self) -> int:
        """The longest input: `max_position_embeddings`, less RoBERTa's `pad_token_id + 1` skipped positions."""
        return self.max_position_embeddings - self.family.position_offset(self.pad_token_id)

    @property
    def has_pooler(self) -> bool:
        """Whether the encoder has BERT's tanh pooler (DistilBERT has none)."""
        return self.family.has_pooler

    @property
    def is_roberta(self) -> bool:
        """RoBERTa-like (RoBERTa, XLM-RoBERTa): position ids start after `pad_token_id`."""
        return self.family.positions_after_padding

    def validate(self, source: str = "BertConfig"):
        """Raises ValueError naming the first bad field (and `source`, e.g. a file path)."""
        if self.model_type not in model_types():
            raise ValueError(f"{source}: field 'model_type' is {self.model_type!r}; supported: "
                             f"{', '.join(model_types())}")
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type in (int, "int") or field.name in _NON_NEGATIVE_FIELDS:
                if field.name in _NON_NEGATIVE_FIELDS:
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ValueError(f"{source}: field '{field.name}' must be an integer >= 0, got {value!r}")
                elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise ValueError(f"{source}: field '{field.name}' must be a positive integer, got {value!r}")
            elif field.type in (float, "float"):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError(f"{source}: field '{field.name}' must be a number, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", *_HEAD_DROPOUT_FIELDS):
            if name in _HEAD_DROPOUT_FIELDS and getattr(self, name) is None:
                continue
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name), (int, float)) or \
                    not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{source}: field '{name}' must be in [0, 1), got {getattr(self, name)!r}")
        for name in ("initializer_range", "layer_norm_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{source}: field '{name}' must be > 0, got {getattr(self, name)!r}")
        if (self.type_vocab_size == 0) == self.family.has_token_types:
            raise ValueError(f"{source}: field 'type_vocab_size' is {self.type_vocab_size}; a {self.model_type} "
                             f"encoder has {'at least one' if self.family.has_token_types else 'none (0)'}")
        if self.pad_token_id >= self.vocab_size:
            raise ValueError(f"{source}: field 'pad_token_id' ({self.pad_token_id}) must be < vocab_size "
                             f"({self.vocab_size})")
        if self.hidden_act not in KNOWN_ACTIVATIONS:
            raise ValueError(
                f"{source}: field 'hidden_act' is {self.hidden_act!r}; expected one of {', '.join(KNOWN_ACTIVATIONS)}"
            )
        if self.embedding_size is not None and (isinstance(self.embedding_size, bool) or not isinstance(
                self.embedding_size, int) or self.embedding_size <= 0):
            raise ValueError(f"{source}: field 'embedding_size' must be a positive integer, got "
                             f"{self.embedding_size!r}")
        for name, neutral in (("embedding_size", None), ("num_hidden_groups", 1), ("inner_group_num", 1),
                              *((head_dropout, None) for head_dropout in _HEAD_DROPOUT_FIELDS)):
            if name in self.family.hf_extra_fields:
                continue
            value = getattr(self, name)
            if value != neutral and not (name == "embedding_size" and value == self.hidden_size):
                owners = " and ".join(family.model_type for family in families() if name in family.hf_extra_fields)
                raise ValueError(f"{source}: field '{name}' is {value!r}; a {self.model_type} encoder needs "
                                 f"{neutral!r} (only {owners} encoders have it)")
        if self.family.shared_layers and self.num_hidden_layers % self.num_hidden_groups:
            raise ValueError(f"{source}: field 'num_hidden_layers' ({self.num_hidden_layers}) must be divisible by "
                             f"'num_hidden_groups' ({self.num_hidden_groups})")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"{source}: field 'hidden_size' ({self.hidden_size}) must be divisible by "
                f"'num_attention_heads' ({self.num_attention_heads})"
            )
        check_pruned_heads(self, source)

    def to_dict(self) -> dict:
        values = dataclasses.asdict(self)
        for name in {name for family in families() for name in family.hf_extra_fields}:
            # Another family's (ALBERT's), or a head dropout left to the hidden one (BERT's and RoBERTa's
            # `classifier_dropout`: Google's bert_config.json has no such key).
            if name not in self.family.hf_extra_fields or (name in _HEAD_DROPOUT_FIELDS and values[name] is None):
                del values[name]
        if self.model_type == "bert" and self.pad_token_id == 0:  # Google's bert_config.json, as before families
            del values["model_type"], values["pad_token_id"]
        if self.pruned_heads:  # JSON's keys: strings, as transformers writes them
            values["pruned_heads"] = {str(layer): list(heads) for layer, heads in sorted(self.pruned_heads.items())}
        else:
            del values["pruned_heads"]
        return values

    @classmethod
    def from_dict(cls, values: dict, source: str = "BertConfig") -> "BertConfig":
        """Builds a config from a Google or Hugging Face style dict.

        Args:
            values: the parsed JSON. Keys that are not fields are ignored, except Hugging Face keys that
                would make the model something other than a BERT-family encoder, which raise. `model_type` picks
                the family (absent: BERT, or ALBERT for Google's `albert_config.json`, known by its
                `num_hidden_groups`); DistilBERT's own names (`dim`, `n_layers`, ...) are read. Missing keys take
                the family's transformers defaults (`ModelFamily.hf_defaults`: RoBERTa's and XLM-RoBERTa's
                `pad_token_id` 1, DistilBERT's 6 layers, ALBERT's `AlbertConfig` sizes), as transformers reads the
                same file.
            source: where the dict came from, for error messages.
        """
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(values).__name__}")
        model_type = values.get("model_type", "bert")
        if is_google_albert(values):
            # Google's albert_config.json: its "gelu" is the tanh form (google-research/albert modeling.gelu)
            model_type = "albert"
            values = {**values, "model_type": "albert"}
            if values.get("hidden_act") == "gelu":
                values["hidden_act"] = "gelu_new"
        if model_type not in model_types():
            raise unsupported_family_error(model_type, source)
        family = family_of(model_type)
        renamed = {ours: values[theirs] for theirs, ours in family.hf_key_renames.items() if theirs in values}
        values = {**family.hf_defaults, **values, **renamed, **family.hf_fixed_values}
        for key, expected in _HF_ARCHITECTURE_KEYS.items():
            if key in values and values[key] != expected:
                raise ValueError(f"{source}: field '{key}' is {values[key]!r}; only {expected!r} is supported")
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in values.items() if k in names}
        config = cls.__new__(cls)
        for field in dataclasses.fields(cls):
            default = field.default_factory() if field.default is dataclasses.MISSING else field.default
            setattr(config, field.name, kwargs.get(field.name, default))
        config._resolve_family_defaults()
        config.pruned_heads = normalise_pruned_heads(config.pruned_heads, source)
        config.validate(source)
        return config

    @classmethod
    def from_json_file(cls, path: str) -> "BertConfig":
        """Reads Google's `bert_config.json` or Hugging Face's `config.json`."""
        return cls.from_dict(read_config_json(path), source=path)

    @classmethod
    def from_preset(cls, name: str) -> "BertConfig":
        """Reads a named preset from `configs/`, e.g. "bert_base_uncased" or "uncased_L-4_H-256_A-4"."""
        import configs  # the top-level presets package

        return cls.from_json_file(configs.preset_path(name))

    def to_hf_dict(self) -> dict:
        """The Hugging Face `config.json` contents for the family's base model (`BertModel`, `RobertaModel`,
        `XLMRobertaModel`, `DistilBertModel`, `AlbertModel`) with this config, in the family's key names."""
        family = self.family
        values = {k: v for k, v in self.to_dict().items() if k not in family.hf_fixed_values}
        for theirs, ours in family.hf_key_renames.items():
            if ours in values:  # (a head dropout left None is not written)
                values[theirs] = values.pop(ours)
        return {"architectures": [family.hf_architecture()], **values, "model_type": self.model_type,
                "pad_token_id": self.pad_token_id, **family.hf_config_extras}


def unsupported_family_error(model_type, source) -> ValueError:
    """The error for a config whose `model_type` names a family not supported here ("t5").

    Args:
        model_type: the config's `model_type`.
        source: the config file, named in the message.
    """
    return ValueError(f"{source}: field 'model_type' is {model_type!r}: a checkpoint of that family is not supported "
                      f"(supported: {', '.join(model_types())})")


def is_google_albert(values: dict) -> bool:
    """Whether a config dict without `model_type` is Google's `albert_config.json` (it has `num_hidden_groups` or
    `inner_group_num`), whose "gelu" is the tanh form."""
    return "model_type" not in values and any(name in values for name in ("num_hidden_groups", "inner_group_num"))
