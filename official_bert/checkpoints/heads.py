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

Examples:

>>> model = BertTokenClassifier(BertEncoder(config), num_labels=9)
>>> load_task_weights(model.encoder, head_specs(model), "bert-base-cased-finetuned-conll03", optional_pooler=True)
"""

from typing import List

from official_bert.checkpoints.weight_map import WeightSpec, dense_specs, layer_norm_specs
from official_bert.models import (BertClassifier, BertMultipleChoice, BertPretrainer, BertSpanLabeler,
                                  BertTokenClassifier)


def head_specs(model) -> List[WeightSpec]:
    """Weight specs of a task model's head (both heads of a `BertPretrainer`), in both formats.

    Args:
        model: a `BertClassifier`, `BertTokenClassifier`, `BertMultipleChoice`, `BertSpanLabeler` or
            `BertPretrainer`.
    Raises:
        TypeError: another model, whose head has no checkpoint names.
    """
    if isinstance(model, (BertClassifier, BertTokenClassifier, BertMultipleChoice)):
        return dense_specs(model.head, google_prefix="", hf_prefix="classifier", google_kernel="output_weights",
                           google_bias="output_bias", google_transposed=True)
    if isinstance(model, BertSpanLabeler):
        return dense_specs(model.head, google_prefix="cls/squad", hf_prefix="qa_outputs",
                           google_kernel="output_weights", google_bias="output_bias", google_transposed=True)
    if isinstance(model, BertPretrainer):
        return masked_lm_specs(model) + next_sentence_specs(model)
    raise TypeError(f"no checkpoint names for the head of a {type(model).__name__}")


def masked_lm_specs(pretrainer, hf_bias_name="cls.predictions.bias") -> List[WeightSpec]:
    """Weight specs of a `BertPretrainer`'s masked-LM head (transform and output bias).

    Args:
        pretrainer: a `BertPretrainer`.
        hf_bias_name: the Hugging Face name of the output bias (older exports: `cls.predictions.decoder.bias`).
    """
    head = pretrainer.masked_lm
    return [
        *dense_specs(head.dense, "cls/predictions/transform/dense", "cls.predictions.transform.dense"),
        *layer_norm_specs(head.layer_norm, "cls/predictions/transform/LayerNorm",
                          "cls.predictions.transform.LayerNorm"),
        WeightSpec(head.output_bias, "cls/predictions/output_bias", hf_bias_name, (head.vocab_size,)),
    ]


def next_sentence_specs(pretrainer) -> List[WeightSpec]:
    """Weight specs of a `BertPretrainer`'s next-sentence head: Google `cls/seq_relationship/output_weights`
    [2, hidden] / `output_bias`, HF `cls.seq_relationship.weight` / `.bias`."""
    return dense_specs(pretrainer.next_sentence, "cls/seq_relationship", "cls.seq_relationship",
                       google_kernel="output_weights", google_bias="output_bias", google_transposed=True)
