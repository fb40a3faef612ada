"""Where each task model's head lives in Google's and Hugging Face's checkpoints.

Models know no checkpoint names: this module names their heads' variables, as `weight_map.encoder_specs` names
the encoder's, so every loader and writer goes through one table.

- `BertClassifier`, `BertTokenClassifier`: HF `classifier.weight` / `.bias` (`BertForSequenceClassification`,
  `BertForTokenClassification`), Google `output_weights` [classes, hidden] / `output_bias` (`run_classifier.py`).
- `BertMultipleChoice`: HF `classifier.weight` [1, hidden] / `.bias` (`BertForMultipleChoice`); Google released
  no multiple-choice code, so its names are the classifier's (`output_weights` [1, hidden] / `output_bias`).
- `BertSpanLabeler`: HF `qa_outputs.*` (`BertForQuestionAnswering`), Google `cls/squad/output_weights`
  [2, hidden] / `cls/squad/output_bias` (`run_squad.py`).
- `BertPretrainer`: HF `cls.predictions.*` / `cls.seq_relationship.*` (`BertForPreTraining`), Google
  `cls/predictions/*` / `cls/seq_relationship/*` (`run_pretraining.py`); the decoder weight is the encoder's word
  embedding matrix, which the encoder's specs already hold.

ALBERT (`AlbertFor*`) has BERT's Google names and BERT's Hugging Face names for the classifier, token-classification,
multiple-choice and question-answering heads; its pre-training heads are `predictions.dense`, `predictions.LayerNorm`
(width E), `predictions.bias` (the decoder is the E-wide word embeddings) and `sop_classifier.classifier` (sentence
order, on the pooled output).

RoBERTa (`RobertaFor*`, also XLM-RoBERTa) and DistilBERT (`DistilBertFor*`) name their heads their own way
(Hugging Face only): the classifier is `classifier.dense` + `classifier.out_proj` (RoBERTa) or `pre_classifier` +
`classifier` (DistilBERT, also its multiple-choice head); the masked LM is `lm_head.dense`, `lm_head.layer_norm`,
`lm_head.bias` (RoBERTa) or `vocab_transform`, `vocab_layer_norm`, `vocab_projector.bias` (DistilBERT); neither
family has a next-sentence head. Token classification (`classifier`) and question answering (`qa_outputs`) are
named as BERT's.

Examples:

>>> model = BertTokenClassifier(BertEncoder(config), num_labels=9)
>>> load_task_weights(model.encoder, head_specs(model), "bert-base-cased-finetuned-conll03", optional_pooler=True)
"""

import dataclasses
from typing import List

from official_bert.checkpoints.weight_map import WeightSpec, dense_specs, hf_only, layer_norm_specs
from official_bert.task_kinds import kind_of_model, resolve


@dataclasses.dataclass(frozen=True)
class HfHead:
    """The transformers class a task model is written as, and whether that class holds the encoder's pooler.

    Args:
        class_suffix: after the family's class prefix ("ForSequenceClassification": `RobertaForSequenceClassification`).
        pooler: the class reads the pooled output (`BertForSequenceClassification`; not `BertForTokenClassification`,
            `BertForQuestionAnswering`, `BertForMaskedLM`, RoBERTa's classifier): otherwise the pooler is left out.
    """

    class_suffix: str
    pooler: bool


def head_specs(model) -> List[WeightSpec]:
    """Weight specs of a task model's head (both heads of a `BertPretrainer`), in both formats: its kind's
    `head_specs` (`official_bert.task_kinds`).

    Args:
        model: a task model of a kind (`BertClassifier`, `BertTokenClassifier`, `BertMultipleChoice`,
            `BertSpanLabeler`, `BertPretrainer`).
    Raises:
        TypeError: another model, whose head has no checkpoint names.
    """
    kind = kind_of_model(model)
    if kind is None:
        raise TypeError(f"no checkpoint names for the head of a {type(model).__name__}")
    return resolve(kind.head_specs)(model)


def hf_head(model) -> HfHead:
    """The transformers class of a task model (its kind's `hf_head`).

    Raises:
        TypeError: a model of no kind, or of a kind transformers has no class for (the time-series classifier).
    """
    kind = kind_of_model(model)
    if kind is None or kind.hf_head is None:
        raise TypeError(f"transformers has no class for a {type(model).__name__}")
    return resolve(kind.hf_head)(model)


def hf_class_name(model) -> str:
    """transformers' class name of a task model, its family's prefix before its kind's `HfHead` suffix
    ("RobertaForTokenClassification").

    Raises:
        TypeError: see `hf_head`.
    """
    return model.encoder.config.family.hf_architecture(hf_head(model).class_suffix)


def sequence_classifier_hf_head(model) -> HfHead:
    """`*ForSequenceClassification`, with the pooler unless the family's classifier has its own dense layer."""
    return HfHead("ForSequenceClassification", model.encoder.config.family.classifier_pre_head is None)


def token_classifier_hf_head(model) -> HfHead:
    """`*ForTokenClassification` (no pooler)."""
    return HfHead("ForTokenClassification", False)


def span_labeler_hf_head(model) -> HfHead:
    """`*ForQuestionAnswering` (no pooler)."""
    return HfHead("ForQuestionAnswering", False)


def multiple_choice_hf_head(model) -> HfHead:
    """`*ForMultipleChoice`, with the pooler unless the family's head has its own dense layer."""
    return HfHead("ForMultipleChoice", model.encoder.config.family.choice_pre_head is None)


def pretrainer_hf_head(model) -> HfHead:
    """`*ForPreTraining` with a sentence head the family's transformers class has (its pooler too), else
    `*ForMaskedLM` (no pooler)."""
    sentence = model.next_sentence is not None and model.encoder.config.family.hf_has_sentence_head
    return HfHead("ForPreTraining" if sentence else "ForMaskedLM", sentence)


def sequence_classifier_specs(model) -> List[WeightSpec]:
    """A `BertClassifier`'s head: the family's `classifier_pre_head` and the classifier after it (RoBERTa's
    `classifier.dense` + `classifier.out_proj`, DistilBERT's `pre_classifier` + `classifier`), else as a token
    classifier's."""
    return _pre_head_specs(model, model.encoder.config.family.classifier_pre_head)


def multiple_choice_specs(model) -> List[WeightSpec]:
    """A `BertMultipleChoice`'s head: the family's `choice_pre_head` and the classifier after it (DistilBERT's
    `pre_classifier` + `classifier`), else as a token classifier's."""
    return _pre_head_specs(model, model.encoder.config.family.choice_pre_head)


def _pre_head_specs(model, pre_head) -> List[WeightSpec]:
    """A classification head with the family's `PreHead` before it (Hugging Face names only); without one (None),
    a token classifier's."""
    if pre_head is None:
        return token_classifier_specs(model)
    return hf_only(dense_specs(model.pre_head, None, pre_head.hf_name)
                   + dense_specs(model.head, None, pre_head.head_hf_name))


def token_classifier_specs(model) -> List[WeightSpec]:
    """The one dense head of a `BertTokenClassifier` (or classifier): HF `classifier`, Google `output_weights` /
    `output_bias`."""
    return dense_specs(model.head, google_prefix="", hf_prefix="classifier", google_kernel="output_weights",
                       google_bias="output_bias", google_transposed=True)


def span_labeler_specs(model) -> List[WeightSpec]:
    """A `BertSpanLabeler`'s head: HF `qa_outputs`, Google `cls/squad/output_weights` / `output_bias`."""
    return dense_specs(model.head, google_prefix="cls/squad", hf_prefix="qa_outputs",
                       google_kernel="output_weights", google_bias="output_bias", google_transposed=True)


def pretrainer_specs(model) -> List[WeightSpec]:
    """A `BertPretrainer`'s heads: the masked LM, and the next-sentence (or sentence-order) head when it has one."""
    if not model.encoder.config.family.hf_has_sentence_head or model.next_sentence is None:  # objective "mlm"
        return masked_lm_specs(model)
    return masked_lm_specs(model) + next_sentence_specs(model)


def masked_lm_specs(pretrainer, hf_bias_name=None) -> List[WeightSpec]:
    """Weight specs of a `BertPretrainer`'s masked-LM head (transform and output bias).

    Args:
        pretrainer: a `BertPretrainer`.
        hf_bias_name: the Hugging Face name of the output bias, one of the family's `hf_masked_lm_bias` (None: the
            first, which transformers saves; older exports hold (also, or only) the tied decoder bias).
    """
    head = pretrainer.masked_lm
    family = pretrainer.encoder.config.family
    dense, layer_norm = family.hf_masked_lm
    specs = [
        *dense_specs(head.dense, "cls/predictions/transform/dense", dense),
        *layer_norm_specs(head.layer_norm, "cls/predictions/transform/LayerNorm", layer_norm),
        WeightSpec(head.output_bias, "cls/predictions/output_bias", hf_bias_name or family.hf_masked_lm_bias[0],
                   (head.vocab_size,)),
    ]
    return specs if family.google_names else hf_only(specs)


def next_sentence_specs(pretrainer) -> List[WeightSpec]:
    """Weight specs of a `BertPretrainer`'s next-sentence head: Google `cls/seq_relationship/output_weights`
    [2, hidden] / `output_bias`, HF `cls.seq_relationship.weight` / `.bias` (ALBERT's sentence-order head:
    `sop_classifier.classifier.weight` / `.bias`)."""
    hf_prefix = pretrainer.encoder.config.family.hf_sentence_head
    return dense_specs(pretrainer.next_sentence, "cls/seq_relationship", hf_prefix,
                       google_kernel="output_weights", google_bias="output_bias", google_transposed=True)
