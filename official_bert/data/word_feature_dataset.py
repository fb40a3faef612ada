"""Batches of cached per-word features (a frozen BERT's, one row per word) for a feature-based tagger.

The cache is one float32 array (total words, layers, hidden), e.g. a memory-mapped `.npy` written by
`FeatureExtractor.word_features`, with sentence s's words at rows `offsets[s]:offsets[s + 1]`. Batches pad
sentences to their longest (sentences of similar length are batched together), so memory holds one batch.

Examples:

>>> data = WordFeatures(np.load("train.npy", mmap_mode="r"), num_words=[len(w) for w in train.words])
>>> dataset = word_feature_dataset(data, labels, batch_size=32, layers=[5, 6], is_training=True)
>>> batches = word_feature_dataset(data, None, 32, [5, 6], is_training=False)
>>> predictions = data.word_predictions((model.predict_on_batch(x) for x in batches), batch_size=32)
"""

from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from official_bert.labels import IGNORE_LABEL


class WordFeatures:
    """A feature cache and its sentence boundaries.

    Args:
        features: (total words, layers, hidden) float array (a memmap is read a batch at a time).
        num_words: words per sentence, in cache order.
    """

    def __init__(self, features, num_words: Sequence[int]):
        self.features = features
        self.num_words = np.asarray(num_words, np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.num_words)])
        if self.offsets[-1] != len(features):
            raise ValueError(f"the sentences have {self.offsets[-1]} words, the cache {len(features)} rows")

    def __len__(self) -> int:
        return len(self.num_words)

    def batch_order(self, batch_size: int, shuffle: bool, seed: int = 0) -> List[np.ndarray]:
        """Sentence indices of each batch: in order, or shuffled with sentences of similar length together."""
        if not shuffle:
            return [np.arange(i, min(i + batch_size, len(self))) for i in range(0, len(self), batch_size)]
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self))
        chunk = 50 * batch_size  # sort within chunks: little padding, still a random mix
        batches = []
        for start in range(0, len(order), chunk):
            part = order[start:start + chunk]
            part = part[np.argsort(self.num_words[part], kind="stable")]
            batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
        return [batches[i] for i in rng.permutation(len(batches))]

    def batch(self, sentences: np.ndarray, layers: Sequence[int], labels=None):
        """`({"features", "word_mask"}, labels)` of some sentences, padded to the longest; labels may be None."""
        width = int(max(self.num_words[sentences].max(), 1))
        _, num_layers, hidden = self.features.shape
        features = np.zeros((len(sentences), width, len(layers), hidden), np.float32)
        mask = np.zeros((len(sentences), width), np.int32)
        label_ids = np.full((len(sentences), width), IGNORE_LABEL, np.int32)
        for row, s in enumerate(sentences):
            start, end = self.offsets[s], self.offsets[s + 1]
            features[row, :end - start] = self.features[start:end][:, list(layers)]
            mask[row, :end - start] = 1
            if labels is not None:
                label_ids[row, :end - start] = labels[s]
        return {"features": features, "word_mask": mask}, label_ids

    def word_predictions(self, logits_batches, batch_size: int) -> List[np.ndarray]:
        """Per sentence, the argmax label ids of its words, from the logits of each in-order batch (batches differ in
        width, so they come one by one)."""
        predictions = []
        for batch, logits in zip(self.batch_order(batch_size, shuffle=False), logits_batches):
            best = np.argmax(logits, axis=-1)  # (batch, width)
            predictions += [best[row, :self.num_words[s]] for row, s in enumerate(batch)]
        return predictions


def word_feature_dataset(data: WordFeatures, labels: Optional[Sequence[Sequence[int]]], batch_size: int,
                         layers: Sequence[int], is_training: bool, seed: int = 0) -> tf.data.Dataset:
    """A `tf.data.Dataset` of `(inputs, labels)` batches (inputs alone when not training).

    Args:
        data: the cache.
        labels: label ids per sentence and word (needed for training).
        batch_size: sentences per batch.
        layers: positions in the cache's layer axis to feed.
        is_training: shuffled (a new order each epoch, from `seed`) and repeated forever; else in order, once.
        seed: shuffle seed.
    """
    if is_training and labels is None:
        raise ValueError("training needs labels")
    hidden = data.features.shape[-1]

    def generate():
        epoch = 0
        while True:
            for sentences in data.batch_order(batch_size, is_training, seed + epoch):
                inputs, label_ids = data.batch(sentences, layers, labels)
                yield (inputs, label_ids) if is_training else inputs
            if not is_training:
                return
            epoch += 1

    input_spec = {"features": tf.TensorSpec((None, None, len(layers), hidden), tf.float32),
                  "word_mask": tf.TensorSpec((None, None), tf.int32)}
    signature = (input_spec, tf.TensorSpec((None, None), tf.int32)) if is_training else input_spec
    return tf.data.Dataset.from_generator(generate, output_signature=signature).prefetch(2)
