"""BertConfig: the hyper-parameters of a BERT-family encoder (BERT, RoBERTa, XLM-RoBERTa, DistilBERT).

One flat dataclass. Defaults are BERT-Base uncased. Reads Google's `bert_config.json`, Hugging Face's
`config.json` (its `model_type` picks the family) and the named presets in the top-level `configs/` package.
"""

import dataclasses
import json
import os

# Activations a BERT config may name, mapped to the form we compute.
#   "gelu": exact erf GELU (Google BERT, HF "gelu", PyTorch default).
#   "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast": the tanh approximation.
KNOWN_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish", "tanh")

# Hugging Face config keys that change the architecture away from BERT; anything else not a field is
# metadata (architectures, torch_dtype, ...) and is ignored.
_HF_ARCHITECTURE_KEYS = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False}

# The families we build, by Hugging Face `model_type`. RoBERTa and XLM-RoBERTa are one architecture (BERT with
# position ids counted past the padding id, one token type); DistilBERT is BERT without token types or pooler.
MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "distilbert")
ROBERTA_TYPES = ("roberta", "xlm-roberta")

# DistilBERT's `config.json` names: theirs -> ours (its LayerNorm epsilon is fixed at 1e-12 in transformers).
_DISTILBERT_KEYS = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                    "hidden_dim": "intermediate_size", "activation": "hidden_act", "dropout": "hidden_dropout_prob",
                    "attention_dropout": "attention_probs_dropout_prob"}

# Fields that are 0 in valid configs: DistilBERT has no token types; BERT's [PAD] is id 0.
_NON_NEGATIVE_FIELDS = ("type_vocab_size", "pad_token_id")


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
        model_type: the family, one of `MODEL_TYPES` (Hugging Face's `model_type`).
        pad_token_id: the padding id (1 in RoBERTa, whose position ids start after it; 0 in BERT).

    A BERT config's `to_dict()` is Google's `bert_config.json` (no `model_type`, `pad_token_id`).
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
    pad_token_id: int = 0

    def __post_init__(self):
        self.validate()

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def max_sequence_length(self) -> int:
        """The longest input: `max_position_embeddings`, less RoBERTa's `pad_token_id + 1` skipped positions."""
        return self.max_position_embeddings - (self.pad_token_id + 1 if self.is_roberta else 0)

    @property
    def has_pooler(self) -> bool:
        """Whether the encoder has BERT's tanh pooler (DistilBERT has none)."""
        return self.model_type != "distilbert"

    @property
    def is_roberta(self) -> bool:
        """RoBERTa or XLM-RoBERTa: position ids start after `pad_token_id`, one token type, `<s> A </s></s> B </s>`."""
        return self.model_type in ROBERTA_TYPES

    def validate(self, source: str = "BertConfig"):
        """Raises ValueError naming the first bad field (and `source`, e.g. a file path)."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type in (int, "int"):
                if field.name in _NON_NEGATIVE_FIELDS:
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ValueError(f"{source}: field '{field.name}' must be an integer >= 0, got {value!r}")
                elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise ValueError(f"{source}: field '{field.name}' must be a positive integer, got {value!r}")
            elif field.type in (float, "float"):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError(f"{source}: field '{field.name}' must be a number, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{source}: field '{name}' must be in [0, 1), got {getattr(self, name)!r}")
        for name in ("initializer_range", "layer_norm_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{source}: field '{name}' must be > 0, got {getattr(self, name)!r}")
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"{source}: field 'model_type' is {self.model_type!r}; supported: "
                             f"{', '.join(MODEL_TYPES)}")
        if (self.type_vocab_size == 0) != (self.model_type == "distilbert"):
            raise ValueError(f"{source}: field 'type_vocab_size' is {self.type_vocab_size}; a {self.model_type} "
                             f"encoder has {'none (0)' if self.model_type == 'distilbert' else 'at least one'}")
        if self.pad_token_id >= self.vocab_size:
            raise ValueError(f"{source}: field 'pad_token_id' ({self.pad_token_id}) must be < vocab_size "
                             f"({self.vocab_size})")
        if self.hidden_act not in KNOWN_ACTIVATIONS:
            raise ValueError(
                f"{source}: field 'hidden_act' is {self.hidden_act!r}; expected one of {', '.join(KNOWN_ACTIVATIONS)}"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"{source}: field 'hidden_size' ({self.hidden_size}) must be divisible by "
                f"'num_attention_heads' ({self.num_attention_heads})"
            )

    def to_dict(self) -> dict:
        values = dataclasses.asdict(self)
        if self.model_type == "bert" and self.pad_token_id == 0:  # Google's bert_config.json, as before families
            del values["model_type"], values["pad_token_id"]
        return values

    @classmethod
    def from_dict(cls, values: dict, source: str = "BertConfig") -> "BertConfig":
        """Builds a config from a Google or Hugging Face style dict.

        Args:
            values: the parsed JSON. Keys that are not fields are ignored, except Hugging Face keys that
                would make the model something other than a BERT-family encoder, which raise. `model_type` picks
                the family (absent: BERT); DistilBERT's own names (`dim`, `n_layers`, ...) are read.
            source: where the dict came from, for error messages.
        """
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(values).__name__}")
        model_type = values.get("model_type", "bert")
        if model_type not in MODEL_TYPES:
            raise ValueError(f"{source}: field 'model_type' is {model_type!r}: a checkpoint of that family is not "
                             f"supported (supported: {', '.join(MODEL_TYPES)})")
        if model_type == "distilbert":
            renamed = {ours: values[theirs] for theirs, ours in _DISTILBERT_KEYS.items() if theirs in values}
            values = {**values, **renamed, "type_vocab_size": 0, "layer_norm_eps": 1e-12}
        for key, expected in _HF_ARCHITECTURE_KEYS.items():
            if key in values and values[key] != expected:
                raise ValueError(f"{source}: field '{key}' is {values[key]!r}; only {expected!r} is supported")
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in values.items() if k in names}
        config = cls.__new__(cls)
        for field in dataclasses.fields(cls):
            setattr(config, field.name, kwargs.get(field.name, field.default))
        config.validate(source)
        return config

    @classmethod
    def from_json_file(cls, path: str) -> "BertConfig":
        """Reads Google's `bert_config.json` or Hugging Face's `config.json`."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"BERT config file not found: {path}")
        with open(path, encoding="utf-8") as f:
            try:
                values = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e})") from None
        return cls.from_dict(values, source=path)

    @classmethod
    def from_preset(cls, name: str) -> "BertConfig":
        """Reads a named preset from `configs/`, e.g. "bert_base_uncased" or "uncased_L-4_H-256_A-4"."""
        import configs  # the top-level presets package

        return cls.from_json_file(configs.preset_path(name))

    def to_hf_dict(self) -> dict:
        """The Hugging Face `config.json` contents for a `BertModel` (`RobertaModel`, `XLMRobertaModel`,
        `DistilBertModel`) with this config."""
        if self.model_type == "distilbert":
            ours = self.to_dict()
            return {"architectures": ["DistilBertModel"], "model_type": "distilbert",
                    **{theirs: ours[name] for theirs, name in _DISTILBERT_KEYS.items()},
                    **{k: ours[k] for k in ("vocab_size", "max_position_embeddings", "initializer_range",
                                            "pad_token_id")},
                    "sinusoidal_pos_embds": False, "tie_word_embeddings": True}
        if self.is_roberta:
            architecture = "XLMRobertaModel" if self.model_type == "xlm-roberta" else "RobertaModel"
            return {"architectures": [architecture], **self.to_dict(), "bos_token_id": 0, "eos_token_id": 2,
                    "position_embedding_type": "absolute"}
        return {
            "architectures": ["BertModel"],
            "model_type": "bert",
            **self.to_dict(),
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
        }
