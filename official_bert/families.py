"""The model families: one `ModelFamily` spec each says everything that makes BERT, RoBERTa, XLM-RoBERTa,
DistilBERT and ALBERT differ; the library asks the spec (`BertConfig.family`), never the family's name.

A family is found by Hugging Face's `model_type` (`family_of`). A new one is one spec and one `register_family`:

>>> register_family(dataclasses.replace(BERT, model_type="my-bert", display_name="MyBERT"))
>>> BertConfig(model_type="my-bert").family.packing_layout
'bert'
"""

import dataclasses
from types import MappingProxyType
from typing import Mapping, Optional, Tuple

from official_bert.tokenizer_kinds import (BPE, BPE_FILES, GOOGLE_SENTENCEPIECE_FILE, SENTENCEPIECE,
                                           SENTENCEPIECE_FILE, WORDPIECE, WORDPIECE_FILE, XLM_ROBERTA_FILE)

# `BertPackInputs` layouts: `[CLS] A [SEP] B [SEP]` (type ids 0 then 1), `<s> A </s></s> B </s>` (type ids 0).
BERT_LAYOUT, ROBERTA_LAYOUT = "bert", "roberta"


def _frozen(values=None):
    return MappingProxyType(dict(values or {}))


@dataclasses.dataclass(frozen=True)
class PreHead:
    """A family's dense layer between the encoder and a classification head (transformers' own).

    Args:
        activation: its activation.
        layer_name: the Keras layer's name (saved weights files hold it).
        hf_name: its Hugging Face name; `head_hf_name` the name of the classifier after it.
        from_first_token: it reads the first token's `sequence_output` after dropout (RoBERTa's classification head:
            its pooler is never trained), rather than `pooled_output`.
    """
    activation: str
    layer_name: str
    hf_name: str
    head_hf_name: str
    from_first_token: bool = False


@dataclasses.dataclass(frozen=True, eq=False)
class ModelFamily:
    """One model family: what its config, tokenizer, encoder, heads and checkpoints look like.

    Args:
        model_type: Hugging Face's `model_type` (`config.json`), the family's key.
        display_name: its name in messages ("RoBERTa").
        tokenizer_kind: of `tokenizer_kinds.TOKENIZER_KINDS`.
        tokenizer_files: alternative sets of tokenizer files that tell the family of a `config.json` without
            `model_type` (`hf_config.infer_model_type`).
        no_tokenizer: why the family has no in-graph tokenizer here (None: it has one).
        packing_layout: `BERT_LAYOUT` or `ROBERTA_LAYOUT`.
        positions_after_padding: position ids start after `pad_token_id` (RoBERTa: `pad_token_id + 1` positions of
            the table are never used).
        has_token_types: a token type table (DistilBERT has none: `type_vocab_size` 0).
        has_pooler: BERT's tanh pooler (DistilBERT's `pooled_output` is the first token).
        pooler_optional: a checkpoint may lack the pooler (transformers saves RoBERTa's task models without one).
        shared_layers: ALBERT's factorised embeddings (`embedding_size`) and blocks shared across layers
            (`num_hidden_groups` groups of `inner_group_num`); no per-layer head pruning.
        default_activation: the activation of its original release ("gelu_new": ALBERT's tanh form).
        special_tokens: the tokenizer's special tokens by role ("cls", "sep", "pad", "mask", "unk").
        hf_key_renames: its `config.json` names -> ours (DistilBERT's `dim`, `n_layers`, ...).
        hf_marker_keys: `config.json` keys that only this family has (tell the family without `model_type`).
        hf_fixed_values: fields its `config.json` never holds, at their fixed values.
        hf_defaults: transformers' config defaults, in our field names, where they are not BERT's (our
            `BertConfig`'s): a `config.json` that leaves out such a key gets the family's (RoBERTa's `pad_token_id` 1,
            DistilBERT's 6 layers, ALBERT's sizes), as transformers reads the same file.
        hf_extra_fields: fields of ours only this family's config has (`to_dict` drops them elsewhere).
        hf_config_extras: keys `to_hf_dict` adds (token ids, ...).
        hf_class_prefix: transformers' class-name prefix ("Roberta": `RobertaModel`, `RobertaForMaskedLM`, ...).
        hf_base_prefix: where a task model holds the encoder in a Hugging Face checkpoint ("roberta.").
        hf_encoder_roots: the first names of the encoder's Hugging Face weight names.
        encoder_weight_names: which `checkpoints.weight_map` naming its encoder weights take ("bert",
            "distilbert", "albert").
        google_names: Google's TF1 names for its heads (its encoder's come from `encoder_weight_names`).
        hf_masked_lm: Hugging Face names of the masked-LM transform's dense and LayerNorm.
        hf_masked_lm_bias: of its output bias, transformers' first (older exports hold the others).
        hf_sentence_head: of the next-sentence (ALBERT: sentence-order) head.
        hf_has_sentence_head: transformers' pre-training model has that head (RoBERTa's and DistilBERT's are masked
            LMs: a sentence head trained here is not written to their Hugging Face directories).
        sentence_head_dropout: dropout before the sentence head (transformers' `AlbertSOPHead`).
        heads_at_hidden_dropout: the task heads ("classifier", "tagger", "multiple_choice") that drop at
            `hidden_dropout_prob` even where `classifier_dropout_prob` is set, as transformers' (DistilBERT's token
            classifier, RoBERTa's multiple-choice head).
        classifier_pre_head: the dense layer before a sequence classifier's head (None: the head reads
            `pooled_output`).
        choice_pre_head: the same before a multiple-choice head.
    """
    model_type: str
    display_name: str
    tokenizer_kind: str = WORDPIECE
    tokenizer_files: Tuple[Tuple[str, ...], ...] = ()
    no_tokenizer: Optional[str] = None
    packing_layout: str = BERT_LAYOUT
    positions_after_padding: bool = False
    has_token_types: bool = True
    has_pooler: bool = True
    pooler_optional: bool = False
    shared_layers: bool = False
    default_activation: str = "gelu"
    special_tokens: Mapping[str, str] = dataclasses.field(default_factory=lambda: _frozen(
        {"cls": "[CLS]", "sep": "[SEP]", "pad": "[PAD]", "mask": "[MASK]", "unk": "[UNK]"}))
    hf_key_renames: Mapping[str, str] = dataclasses.field(default_factory=_frozen)
    hf_marker_keys: Tuple[str, ...] = ()
    hf_fixed_values: Mapping[str, object] = dataclasses.field(default_factory=_frozen)
    hf_defaults: Mapping[str, object] = dataclasses.field(default_factory=_frozen)
    hf_extra_fields: Tuple[str, ...] = ()
    hf_config_extras: Mapping[str, object] = dataclasses.field(
        default_factory=lambda: _frozen({"position_embedding_type": "absolute"}))
    hf_class_prefix: str = "Bert"
    hf_base_prefix: str = "bert."
    hf_encoder_roots: Tuple[str, ...] = ("embeddings.", "encoder.", "pooler.")
    encoder_weight_names: str = "bert"
    google_names: bool = True
    hf_masked_lm: Tuple[str, str] = ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm")
    hf_masked_lm_bias: Tuple[str, ...] = ("cls.predictions.bias", "cls.predictions.decoder.bias")
    hf_sentence_head: str = "cls.seq_relationship"
    hf_has_sentence_head: bool = True
    sentence_head_dropout: bool = False
    heads_at_hidden_dropout: Tuple[str, ...] = ()
    classifier_pre_head: Optional[PreHead] = None
    choice_pre_head: Optional[PreHead] = None

    def position_offset(self, pad_token_id: int) -> int:
        """Positions of the table before the first token's (RoBERTa's `pad_token_id + 1`; 0 elsewhere)."""
        return pad_token_id + 1 if self.positions_after_padding else 0

    def hf_architecture(self, head: str = "Model") -> str:
        """transformers' class name: "Model", "ForMaskedLM", "ForPreTraining" (a masked LM where the family has
        no sentence head), ..."""
        if head == "ForPreTraining" and not self.hf_has_sentence_head:
            head = "ForMaskedLM"
        return self.hf_class_prefix + head


# transformers' `classifier_dropout` of BERT and RoBERTa (None: the hidden dropout), before their task heads.
BERT = ModelFamily(model_type="bert", display_name="BERT", tokenizer_files=((WORDPIECE_FILE,),),
                   hf_key_renames=_frozen({"classifier_dropout": "classifier_dropout_prob"}),
                   hf_extra_fields=("classifier_dropout_prob",))

_ROBERTA_PRE_HEAD = PreHead("tanh", "classifier_dense", "classifier.dense", "classifier.out_proj",
                            from_first_token=True)
ROBERTA = dataclasses.replace(
    BERT, model_type="roberta", display_name="RoBERTa", tokenizer_kind=BPE, tokenizer_files=(BPE_FILES,),
    packing_layout=ROBERTA_LAYOUT, positions_after_padding=True, pooler_optional=True,
    special_tokens=_frozen({"cls": "<s>", "sep": "</s>", "pad": "<pad>", "mask": "<mask>", "unk": "<unk>"}),
    hf_defaults=_frozen({"vocab_size": 50265, "pad_token_id": 1}),  # transformers' `RobertaConfig`'s
    hf_config_extras=_frozen({"bos_token_id": 0, "eos_token_id": 2, "position_embedding_type": "absolute"}),
    hf_class_prefix="Roberta",
    hf_base_prefix="roberta.", google_names=False, hf_masked_lm=("lm_head.dense", "lm_head.layer_norm"),
    hf_masked_lm_bias=("lm_head.bias",), hf_has_sentence_head=False, classifier_pre_head=_ROBERTA_PRE_HEAD,
    heads_at_hidden_dropout=("multiple_choice",))

XLM_ROBERTA = dataclasses.replace(
    ROBERTA, model_type="xlm-roberta", display_name="XLM-RoBERTa", tokenizer_files=((XLM_ROBERTA_FILE,),),
    no_tokenizer=f"XLM-RoBERTa's SentencePiece tokenizer ({XLM_ROBERTA_FILE}) has no in-graph preprocessor here yet",
    hf_defaults=_frozen({"pad_token_id": 1}),  # transformers' `XLMRobertaConfig`'s (its vocab_size is BERT's 30522)
    hf_class_prefix="XLMRoberta")

_DISTILBERT_PRE_HEAD = PreHead("relu", "pre_classifier", "pre_classifier", "classifier")
# DistilBERT's `config.json` names: theirs -> ours (its LayerNorm epsilon is fixed at 1e-12 in transformers).
_DISTILBERT_KEYS = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                    "hidden_dim": "intermediate_size", "activation": "hidden_act", "dropout": "hidden_dropout_prob",
                    "attention_dropout": "attention_probs_dropout_prob",
                    "seq_classif_dropout": "classifier_dropout_prob", "qa_dropout": "qa_dropout_prob"}
DISTILBERT = dataclasses.replace(
    BERT, model_type="distilbert", display_name="DistilBERT", tokenizer_files=(), has_token_types=False,
    has_pooler=False, hf_key_renames=_frozen(_DISTILBERT_KEYS), hf_marker_keys=("dim", "n_layers", "n_heads"),
    hf_fixed_values=_frozen({"type_vocab_size": 0, "layer_norm_eps": 1e-12}),
    # transformers' `DistilBertConfig`'s n_layers, seq_classif_dropout and qa_dropout (the rest: BERT's)
    hf_defaults=_frozen({"num_hidden_layers": 6, "classifier_dropout_prob": 0.2, "qa_dropout_prob": 0.1}),
    hf_extra_fields=("classifier_dropout_prob", "qa_dropout_prob"), heads_at_hidden_dropout=("tagger",),
    hf_config_extras=_frozen({"sinusoidal_pos_embds": False, "tie_word_embeddings": True}),
    hf_class_prefix="DistilBert", hf_base_prefix="distilbert.", hf_encoder_roots=("embeddings.", "transformer."),
    encoder_weight_names="distilbert", google_names=False, hf_masked_lm=("vocab_transform", "vocab_layer_norm"),
    hf_masked_lm_bias=("vocab_projector.bias",), hf_has_sentence_head=False, classifier_pre_head=_DISTILBERT_PRE_HEAD,
    choice_pre_head=_DISTILBERT_PRE_HEAD)

ALBERT = dataclasses.replace(
    BERT, model_type="albert", display_name="ALBERT", tokenizer_kind=SENTENCEPIECE,
    tokenizer_files=((SENTENCEPIECE_FILE,), (GOOGLE_SENTENCEPIECE_FILE,)), shared_layers=True,
    default_activation="gelu_new", hf_key_renames=_frozen(),  # its config.json names are ours (not BERT's)
    special_tokens=_frozen({"cls": "[CLS]", "sep": "[SEP]", "pad": "<pad>", "mask": "[MASK]", "unk": "<unk>"}),
    hf_defaults=_frozen(dict(  # transformers' `AlbertConfig` defaults
        vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12, num_hidden_groups=1,
        num_attention_heads=64, intermediate_size=16384, inner_group_num=1, hidden_act="gelu_new",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=512, type_vocab_size=2,
        initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0, classifier_dropout_prob=0.1)),
    hf_extra_fields=("embedding_size", "num_hidden_groups", "inner_group_num", "classifier_dropout_prob"),
    hf_config_extras=_frozen({"bos_token_id": 2, "eos_token_id": 3, "position_embedding_type": "absolute",
                             "tie_word_embeddings": True}),
    hf_class_prefix="Albert", hf_base_prefix="albert.", encoder_weight_names="albert",
    hf_masked_lm=("predictions.dense", "predictions.LayerNorm"),
    hf_masked_lm_bias=("predictions.bias", "predictions.decoder.bias"),
    hf_sentence_head="sop_classifier.classifier", sentence_head_dropout=True)

_REGISTRY = {}  # model_type -> ModelFamily, in registration order


def register_family(family: ModelFamily) -> ModelFamily:
    """Adds (or replaces) a family, found from then on by its `model_type`. Returns it."""
    _REGISTRY[family.model_type] = family
    return family


def unregister_family(model_type: str):
    """Removes a family that `register_family` added (e.g. a test's)."""
    _REGISTRY.pop(model_type, None)


def model_types() -> tuple:
    """The `model_type` of every registered family."""
    return tuple(_REGISTRY)


def families() -> tuple:
    """Every registered `ModelFamily`."""
    return tuple(_REGISTRY.values())


def family_of(model_type: str) -> ModelFamily:
    """The family of a Hugging Face `model_type`.

    Raises:
        ValueError: no such family registered (the message lists those that are).
    """
    try:
        return _REGISTRY[model_type]
    except (KeyError, TypeError):
        raise ValueError(f"model_type {model_type!r} is not supported (supported: {', '.join(_REGISTRY)})") from None


def check_sequence_length(seq_length, config, name="max_seq_length", source=None):
    """Raises unless `3 <= seq_length <= config.max_sequence_length` (two special tokens and one piece; the
    position table, less the family's skipped positions).

    Args:
        seq_length: the packed length asked for.
        config: the model's `BertConfig`.
        name: the flag or argument, named in the message ("--max_seq_length").
        source: prefixed to the message (a model_dir or checkpoint), if given.
    """
    if not 3 <= seq_length <= config.max_sequence_length:
        offset = config.family.position_offset(config.pad_token_id)
        raise ValueError(f"{source + ': ' if source else ''}{name}={seq_length} must be between 3 and the model's "
                         f"max_position_embeddings={config.max_position_embeddings}"
                         + (f" less {config.family.display_name}'s {offset} padding positions" if offset else ""))


for _family in (BERT, ROBERTA, XLM_ROBERTA, DISTILBERT, ALBERT):
    register_family(_family)
