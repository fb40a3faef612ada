"""EntityTagger: raw text in, named entities out, with their type and character spans.

Words are the BERT tokenizer's words: the text split on whitespace and punctuation (and around CJK
characters), as Hugging Face's token-classification pipeline splits it. For RoBERTa (`layout="roberta"`) the
text is tokenized after a space, as in training (`RobertaTokenizerFast(add_prefix_space=True)`), and a word is a
piece that begins with a space ("Ġ") or follows whitespace, and the pieces up to the next such one (the pipeline's
grouping: punctuation right after a word stays in it; see `tagging_dataset.text_words`). Each word is tagged from its
first word piece (the piece that carries the label in training), long texts are windowed exactly as in
training (`official_bert.data.tagging_dataset`), and entities are read off the tags with conlleval's
chunk rules (`official_bert.metrics.tagging.get_entities`). Character spans come from the in-graph
tokenizer's byte offsets, converted to Python string indices of the input: `text[start:end]` is the
entity.

Examples:

>>> tagger = EntityTagger.from_model_dir("out/ner")
>>> tagger(["Peter Blackburn flew to Brussels."])
[[{'type': 'PER', 'start': 0, 'end': 15, 'text': 'Peter Blackburn'},
  {'type': 'LOC', 'start': 24, 'end': 32, 'text': 'Brussels'}]]
>>> tagger.tag_words([["EU", "rejects", "German", "call"]])
[['B-ORG', 'O', 'B-MISC', 'O']]
"""

from typing import List, Sequence

import numpy as np
import tensorflow as tf

from official_bert.data.padding import XLA_LENGTH_MULTIPLE
from official_bert.data.tagging_dataset import (bare_space, build_windows, starts_word, text_words, whitespace_pieces,
                                                word_pieces, word_predictions, word_prefix)
from official_bert.metrics.tagging import get_entities
from official_bert.models.text_inputs import check_all_texts
from official_bert.pipelines.progress import PredictProgress

# Without XLA, a window is predicted at its pieces rounded up to this many, a `predict` call per length. On 2 CPU
# cores, all-MiniLM-L6-v2 on 500 CoNLL-2003 test sentences (batch 64): 85, 99-103, 96 and 40 sentences/s with
# 4, 8, 16 and 32; 16 at the full 128.
LENGTH_MULTIPLE = 8


class EntityTagger:
    """Tags words and finds entities in raw text with a trained `BertTokenClassifier`.

    Args:
        model: a `BertTokenClassifier` (logits (batch, seq, num_labels)).
        tokenizer: the tokenizer it was trained with (`BertTokenizer`, `BytePairTokenizer` for RoBERTa,
            `SentencepieceTokenizer` for ALBERT).
        label_names: tag of each label id (IOB2, e.g. from the model_dir's `task.json`).
        seq_length: window length (the training `max_seq_length`).
        batch_size: windows per prediction batch.
        layout: "bert", or "roberta" (words tokenized after a space, `<s> pieces </s>`).
        progress_seconds: seconds between progress lines (logged at INFO: sentences done / total, rate) while it
            tags; a last line when done.
    """

    def __init__(self, model, tokenizer, label_names: Sequence[str], seq_length: int = 128, batch_size: int = 64,
                 layout: str = "bert", progress_seconds: float = 10.0):
        self.model = model
        self.tokenizer = tokenizer
        self.label_names = list(label_names)
        self.seq_length = seq_length
        self.batch_size = batch_size
        self.layout = layout
        self.progress_seconds = progress_seconds
        self._prefix = word_prefix(layout)
        self._starts_word = starts_word(tokenizer, layout)
        self._lone_space = bare_space(tokenizer.get_vocab(), layout)
        self._space = whitespace_pieces(tokenizer.get_vocab(), layout)

    @classmethod
    def from_model_dir(cls, model_dir: str, batch_size: int = 64) -> "EntityTagger":
        """Loads a `tasks.run_ner` model_dir (through `official_bert.model_dir`)."""
        from official_bert.model_dir import TAGGING, load_model_dir

        loaded = load_model_dir(model_dir)
        if loaded.kind != TAGGING:
            raise ValueError(f"{model_dir}: a {loaded.kind} model_dir; the entity tagger needs a tasks.run_ner one")
        from official_bert.text.preprocessing import tokenizer_from_files

        tokenizer = tokenizer_from_files(loaded.vocab_file, loaded.lower_case)
        return cls(loaded.model, tokenizer, loaded.info["label_names"], loaded.max_seq_length, batch_size,
                   layout=loaded.config.packing_layout)

    def _predict(self, pieces, noun="sentences") -> List[List[str]]:
        windows = build_windows(pieces, self.seq_length, self.tokenizer.get_special_tokens_dict())
        return [[self.label_names[i] for i in ids] for ids in word_predictions(windows, self._logits(windows, noun))]

    def _logits(self, windows, noun="sentences") -> np.ndarray:
        """The windows' logits (windows, seq_length, labels), 0 after each window's cut length.

        Windows are predicted in groups of one length: each window's pieces rounded up to `LENGTH_MULTIPLE`
        (`XLA_LENGTH_MULTIPLE` under XLA, which compiles a program per shape), shortest first. Padding is masked
        out of attention, so the logits at the real pieces are the full-length ones up to float rounding, at the
        real length's compute (CoNLL-2003 test windows: 18.8 pieces on average of 128). Logs progress in `noun`.
        """
        lengths = windows.inputs["input_mask"].sum(axis=1)  # (windows,) pieces, [CLS] and [SEP] included
        multiple = XLA_LENGTH_MULTIPLE if self.model.jit_compile else LENGTH_MULTIPLE
        cut = np.minimum(-(-lengths // multiple) * multiple, self.seq_length)  # (windows,)
        progress = self._progress(windows, cut, noun)
        logits = np.zeros((len(windows), self.seq_length, len(self.label_names)), np.float32)
        for length in np.unique(cut):
            rows = np.flatnonzero(cut == length)
            inputs = {name: values[rows, :length] for name, values in windows.inputs.items()}  # (rows, length) each
            dataset = tf.data.Dataset.from_tensor_slices(inputs).batch(self.batch_size).prefetch(tf.data.AUTOTUNE)
            logits[rows, :length] = self.model.predict(dataset, verbose=0,
                                                       callbacks=[progress.group(len(rows), self.batch_size)])
        progress.finish()
        return logits

    def _progress(self, windows, cut, noun):
        """The `PredictProgress` of `_logits`, which predicts the windows by `cut` length (stable order)."""
        order = np.argsort(cut, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(1, len(order) + 1)  # windows predicted once a window is done
        complete = np.zeros(len(windows.num_words), np.int64)  # windows predicted once a sentence is done
        np.maximum.at(complete, windows.sentence, rank)
        return PredictProgress(np.searchsorted(np.sort(complete), np.arange(len(order) + 1), side="right"),
                               np.concatenate([[0], np.cumsum(cut[order])]), "tagged", noun, self.progress_seconds)

    def tag_words(self, sentences: Sequence[Sequence[str]]) -> List[List[str]]:
        """The IOB2 tag of every word of pre-split sentences (e.g. CoNLL's)."""
        return self._predict(word_pieces(self.tokenizer, sentences, layout=self.layout), "sentences")

    def split_words(self, texts: Sequence[str]):
        """The tokenizer's words of each text: `[text] -> (pieces per word, (start, end) char span per word)`.

        RoBERTa: the text, leading whitespace stripped, is tokenized after a space (none when nothing is left);
        whitespace-only pieces start no word (`tagging_dataset.text_words`).
        """
        if not texts:
            return []
        tokenized = [(self._prefix + t.lstrip() if t.strip() else "") if self._prefix else t for t in texts]
        ids, starts, ends = self.tokenizer(tf.constant(tokenized, tf.string), with_offsets=True)
        result = []
        for text, source, row_ids, row_starts, row_ends in zip(texts, tokenized, ids.to_list(), starts.to_list(),
                                                               ends.to_list()):
            shift = len(text.encode("utf-8")) - len(source.encode("utf-8"))  # bytes of `text` before `source`'s
            # byte offset -> character index: character i starts at byte char_starts[i]
            char_starts = np.cumsum([0] + [len(c.encode("utf-8")) for c in text])
            words = text_words(row_ids, row_starts, row_ends, self._starts_word, self._lone_space, self._space)
            pieces = [row_ids[first:end] for first, end, _, _ in words]
            spans = [(int(np.searchsorted(char_starts, s + shift)), int(np.searchsorted(char_starts, e + shift)))
                     for _, _, s, e in words]
            result.append((pieces, spans))
        return result

    def __call__(self, texts: Sequence[str]) -> List[List[dict]]:
        """The entities of each text: dicts of `type`, `start`, `end` (character indices) and `text`."""
        if isinstance(texts, str):
            raise TypeError("pass a list of texts")
        check_all_texts(texts)
        split = self.split_words(texts)
        tags = self._predict([pieces for pieces, _ in split], "texts")
        entities = []
        for text, (_, spans), text_tags in zip(texts, split, tags):
            found = []
            for type_, first, last in get_entities(text_tags):
                start, end = spans[first][0], spans[last][1]
                found.append({"type": type_, "start": start, "end": end, "text": text[start:end]})
            entities.append(found)
        return entities
