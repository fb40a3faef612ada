"""TextInputs: a task model that takes raw strings, its preprocessor part of it (keras-hub's Task does the same).

A task model built with a `Preprocessor` (`BertClassifier.from_pretrained(path, ...)`, or `preprocessor=` in its
constructor) takes Python lists, NumPy arrays or pandas columns of strings in `fit`, `evaluate` and `predict`, the
`*_on_batch` methods and a call (a pair of texts as a tuple or dict of two, or a DataFrame of two columns), or a
`tf.data.Dataset` of strings in the first three: the preprocessor is mapped over a `tf.data`
pipeline, outside the jit-compiled step (XLA has no string kernels), and the model runs on the packed ints as
before. Packed int inputs still work as they always did; a tagger (`takes_words`) also takes sentences as lists
of words. The preprocessor (its vocabulary inline), the label names, the text feature names and the task settings
of the model_dir it was read from are in the model's config, so `model.save("x.keras")` and
`keras.saving.load_model` round-trip them; `model.export(dir)` writes the raw-text TF-Serving SavedModel of
`python -m export.saved_model`.

`from_pretrained` and `export` read checkpoint files and write SavedModels, which the models layer knows nothing
of: they live in `official_bert.pipelines.task_models`, named here by dotted path and imported when called (as
`task_kinds` names export's serving modules), so that the models import nothing above them.
"""

import importlib
import threading

import keras
import numpy as np

TASK_MODELS = "official_bert.pipelines.task_models"  # from_pretrained and export (imported when called)
DEFAULT_BATCH_SIZE = 32  # Keras' own default for arrays
PAIR_FEATURES = ("text", "text_b")  # the serving input names of unnamed texts (a tuple), as GLUE's


def _as_array(values):
    """A pandas Series or Index (anything 1-D with `to_numpy`) as a NumPy array; anything else as it is. pandas'
    own string dtype is not one Keras or TensorFlow reads."""
    if not isinstance(values, np.ndarray) and hasattr(values, "to_numpy") and getattr(values, "ndim", None) == 1:
        return values.to_numpy(dtype=object)
    return values


def _items(values):
    """The items of a list, object array or pandas Series as a list; None for anything else."""
    values = _as_array(values)
    if isinstance(values, np.ndarray) and values.dtype.kind == "O":
        return values.ravel().tolist()
    return values if isinstance(values, list) else None


def check_all_texts(values, name="texts"):
    """ValueError naming the first item of `values` (a list, object array or pandas Series) that is not a string: a
    missing text is None, or pandas' NaN for an empty cell.

    Args:
        values: the texts (anything but a list, array or Series is left alone).
        name: what `values` are, for the message ("texts", a column's name).
    """
    for i, value in enumerate(_items(values) or []):
        if not isinstance(value, (str, bytes)):
            raise ValueError(f"{name}[{i}] is {value!r}, not a string: every example needs its text (a missing one "
                             "is None, or NaN in pandas; drop those examples or fill them, e.g. .fillna(''))")


def _is_texts(values):
    """Whether `values` (a list, array or pandas Series) holds strings; an empty 1-D array holds no examples of any
    kind, and counts as texts (`text_segments` says it is empty)."""
    values = _as_array(values)
    if isinstance(values, np.ndarray):
        if values.ndim == 1 and values.size == 0:
            return True
        return values.dtype.kind in "USO" and (values.dtype.kind != "O" or all(
            isinstance(v, (str, bytes)) for v in values.flat))
    return isinstance(values, list) and bool(values) and all(isinstance(v, (str, bytes)) for v in values)


def _columns(x):
    """A pandas DataFrame (anything 2-D with `columns`) as a dict of its columns; anything else as it is."""
    if getattr(x, "ndim", None) == 2 and hasattr(x, "columns") and hasattr(x, "to_numpy"):
        return {name: x[name] for name in x.columns}
    return x


def text_segments(x):
    """The texts of an in-memory `x`: `(names, [array of str per segment])`, or None when `x` holds no strings.

    Args:
        x: a list, 1-D array or pandas Series of strings; a tuple of one or two of them (a pair: `("text",
            "text_b")`); or a dict (or pandas DataFrame) of one or two of them, its keys (columns) the names.
            Anything else (packed ints) is not text.
    Raises:
        TypeError: a single string (a list of texts is expected).
        ValueError: no examples, more than two texts per example, texts of unequal counts, or a missing text
            among strings (`check_all_texts`).
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"got the single string {x[:40]!r}; pass a list of texts")
    x = _columns(x)
    named = x.items() if isinstance(x, dict) else zip(PAIR_FEATURES, x) if isinstance(x, tuple) else [("texts", x)]
    for name, values in named:  # texts with one missing would otherwise not look like texts at all
        if any(isinstance(v, (str, bytes)) for v in _items(values) or []):
            check_all_texts(values, name)
    if isinstance(x, dict) and x and all(_is_texts(v) for v in x.values()):
        names, parts = tuple(x), list(x.values())
    elif isinstance(x, tuple) and x and all(_is_texts(v) for v in x):
        names, parts = PAIR_FEATURES[:len(x)], list(x)
    elif _is_texts(x):
        names, parts = PAIR_FEATURES[:1], [x]
    else:
        return None
    if len(parts) > 2:
        raise ValueError(f"got {len(parts)} texts per example ({', '.join(map(str, names))}); at most two (a pair)")
    counts = {len(part) for part in parts}
    if len(counts) > 1:
        raise ValueError(f"the texts of a pair differ in count: {', '.join(map(str, names))} have "
                         f"{[len(part) for part in parts]}")
    if counts == {0}:
        raise ValueError("got no examples (an empty batch of texts); pass at least one")
    return names, [np.asarray(_as_array(part), dtype=object) for part in parts]


def is_words(x):
    """Whether `x` is sentences of words: a list (or array) of lists (tuples, arrays) of str."""
    return isinstance(x, (list, np.ndarray)) and len(x) > 0 and all(
        isinstance(words, (list, tuple, np.ndarray)) and all(isinstance(word, str) for word in words) for words in x)


def _dataset_texts(spec):
    """Whether a dataset's `x` element spec is strings: a string spec, or a tuple or dict of them."""
    import tensorflow as tf

    specs = list(spec.values()) if isinstance(spec, dict) else list(spec) if isinstance(spec, tuple) else [spec]
    return bool(specs) and all(isinstance(s, tf.TensorSpec) and s.dtype == tf.string for s in specs)


class TextInputs:
    """Mixin (before `keras.Model` in `TaskModel`'s bases): raw-string inputs through the model's own preprocessor.

    Args (keyword arguments of every task model's constructor, echoed by its `get_config`):
        preprocessor: an `official_bert.text.Preprocessor` (or its config), or None: the model then takes packed
            ints only, and strings are refused with what to do instead.
        label_names: the class (tag) names in id order, or None. `fit` and `evaluate` then take them as labels
            too, and `export` answers them; `predict` still returns logits, as Keras does.
        text_features: the names of the texts, e.g. ("text", "text_b") (None: taken from the first `fit` on
            texts): `export`'s serving inputs.
        task_settings: the task.json of the model_dir the model was read from (`from_pretrained`), whose settings
            `export` serves again (a tuned multi-label `threshold`, SQuAD's answer lengths, ...), or None.
    """

    label_count_argument = None  # the constructor argument `from_pretrained(labels=...)` sets: "num_classes", ...
    takes_words = False  # whether it also takes sentences as lists of words, tagged word by word (a tagger)

    def __init__(self, *args, preprocessor=None, label_names=None, text_features=None, task_settings=None, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(preprocessor, dict):  # read back from a config: its class registers when imported
            from official_bert.text.preprocessing import Preprocessor  # noqa: F401  (TensorFlow's: only here)

            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        self.preprocessor = preprocessor
        self.label_names = None if label_names is None else tuple(str(name) for name in label_names)
        self.text_features = None if text_features is None else tuple(text_features)
        self.task_settings = None if task_settings is None else dict(task_settings)

    @classmethod
    def from_pretrained(cls, path, labels=None, seq_length=None, lower_case=None, **kwargs):
        """The task model on a pretrained encoder, with its tokenizer as its preprocessor and a new, untrained head
        (a transformers task checkpoint's own head where it fits: its class and number of labels, which its
        `id2label` names when `labels` are not given); from a model_dir of this model's kind (`tasks.run_*`'s)
        without labels, the trained model, its labels too.

        Args:
            path: a Hugging Face or Google checkpoint directory, a model_dir of ours, or a Hugging Face hub id
                (`google-bert/bert-base-uncased`: downloaded into huggingface_hub's cache).
            labels: the class (tag) names; their count sizes the head (or give `num_classes` / `num_labels`); a
                loaded head's outputs follow their order.
            seq_length: the packed length of the texts, special tokens included (default: a trained model_dir's,
                else 128).
            lower_case: overrides the casing found beside the checkpoint.
            **kwargs: the model's constructor arguments (`num_classes`, `dropout_rate`, ...).

        Examples:
        ```python
        model = official_bert.BertClassifier.from_pretrained("bert-dir", labels=["neg", "pos"])
        model.compile(optimizer=keras.optimizers.Adam(2e-5))
        model.fit(["a gripping film", "a dull film"], ["pos", "neg"], epochs=3)
        model.predict(["what a film"])  # (1, 2) logits
        ```
        """
        return importlib.import_module(TASK_MODELS).from_pretrained(cls, path, labels, seq_length, lower_case,
                                                                    **kwargs)

    def text_inputs_config(self):
        """The constructor arguments of this mixin, for the model's `get_config`."""
        return {"preprocessor": None if self.preprocessor is None else
                keras.saving.serialize_keras_object(self.preprocessor),
                "label_names": None if self.label_names is None else list(self.label_names),
                "text_features": None if self.text_features is None else list(self.text_features),
                "task_settings": self.task_settings}

    def task_fields(self):
        """The model's task.json fields besides the texts' (`export`); a task model adds its head's."""
        return {}

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None, version=None, **kwargs):
        """With a preprocessor: the raw-text TF-Serving SavedModel that `python -m export.saved_model` writes for
        a model_dir of this model (signatures, `assets/`, warm-up requests), in `<filepath>/<version>/`; returns
        that directory. Without one (or another `format`), Keras' own `Model.export`.

        Args:
            filepath: the export's base directory (TF Serving's `--model_base_path`).
            format: "tf_saved_model"; any other is Keras'.
            verbose, input_signature, **kwargs: Keras' `export` arguments (without a preprocessor).
            version: a positive integer; default: one more than the highest there (1 if none).
        """
        if self.preprocessor is None or format != "tf_saved_model":
            return super().export(filepath, format=format, verbose=verbose, input_signature=input_signature, **kwargs)
        if input_signature is not None or kwargs:
            given = sorted(kwargs) + (["input_signature"] if input_signature is not None else [])
            raise TypeError(f"export of a model with a preprocessor takes filepath and version; got {given}")
        return importlib.import_module(TASK_MODELS).export(self, filepath, version)

    def save_pretrained(self, path, overwrite=False):
        """The model as a Hugging Face directory that transformers loads with its head (`python -m
        export.hugging_face` writes a model_dir's): `config.json` (its labels as `id2label`), `model.safetensors`
        and its preprocessor's tokenizer files and casing. Returns `path`.

        Args:
            path: the directory (created).
            overwrite: replace a `model.safetensors` there; otherwise that is an error.

        Examples:
        ```python
        model.save_pretrained("out/hf")  # transformers.AutoModelForSequenceClassification.from_pretrained("out/hf")
        ```
        """
        if self.preprocessor is None:
            name = type(self).__name__
            raise ValueError(f"{name}.save_pretrained writes the model's tokenizer beside it, and this one has none: "
                             f"build it with {name}.from_pretrained(path, ...), or write the weights alone with "
                             "official_bert.checkpoints.save_task_model(model, path, vocab_file)")
        return importlib.import_module(TASK_MODELS).save_pretrained(self, path, overwrite)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, **kwargs):
        """`keras.Model.fit` (its arguments, in its order); texts (see the class) go through the preprocessor in
        `tf.data`, batched by `batch_size` (default 32), shuffled each epoch unless `shuffle=False`;
        `validation_split` takes the last examples, as Keras does."""
        segments = text_segments(x)
        cut = []  # the `_CutTexts` of the datasets of texts given, reported once the call returns
        if self._is_words(x):
            if validation_split:
                raise ValueError("validation_split with sentences of words: pass validation_data=(sentences, tags)")
            x, y, sample_weight = self._words_dataset(x, y, sample_weight, batch_size, shuffle), None, None
            batch_size, shuffle = None, False
        elif segments is not None:
            self._record_text_features(segments[0])
            if validation_split and validation_data is None:
                x, y, sample_weight, validation_data = _split(segments, y, sample_weight, validation_split)
                validation_split = 0.0
            x = self._text_dataset(x, y, sample_weight, batch_size, shuffle)
            y = sample_weight = batch_size = None
            shuffle = False  # (done in the dataset; Keras warns that it cannot shuffle one)
        elif self._is_text_dataset(x):
            x = self._mapped(x, self._counted(cut, "texts read from the dataset"))
        if validation_data is not None:
            validation_data = self._validation_dataset(validation_data, batch_size, cut)
        history = super().fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
                              validation_split=validation_split, validation_data=validation_data, shuffle=shuffle,
                              class_weight=class_weight, sample_weight=sample_weight, **kwargs)
        self._report_cut(cut)
        return history

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, **kwargs):
        """`keras.Model.evaluate`, taking texts (or sentences of words) as `fit` does."""
        cut = []
        if self._is_words(x):
            x, y, sample_weight, batch_size = self._words_dataset(x, y, sample_weight, batch_size), None, None, None
        elif text_segments(x) is not None:
            x, y, sample_weight, batch_size = self._text_dataset(x, y, sample_weight, batch_size), None, None, None
        elif self._is_text_dataset(x):
            x = self._mapped(x, self._counted(cut, "texts read from the dataset"))
        results = super().evaluate(x, y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight,
                                   **kwargs)
        self._report_cut(cut)
        return results

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`, taking texts as `fit` does: the logits (never label names, as Keras). Sentences of
        words (a tagger's `takes_words`) give a list, per sentence, of the (words, num_labels) logits at each word's
        first piece."""
        if self._is_words(x):
            module = importlib.import_module(TASK_MODELS)
            windows = module.word_windows(self, x)
            if not len(windows):  # sentences of no words: nothing to run (Keras' predict fails on no batches)
                return [np.zeros((0, self.num_labels), np.float32) for _ in x]
            return module.word_logits(windows, super().predict(self._windows_dataset(windows, batch_size), **kwargs))
        cut = []
        if text_segments(x) is not None:
            x, batch_size = self._text_dataset(x, batch_size=batch_size), None
        elif self._is_text_dataset(x):
            x = self._mapped(x, self._counted(cut, "texts read from the dataset"))
        logits = super().predict(x, batch_size=batch_size, **kwargs)
        self._report_cut(cut)
        return logits

    def __call__(self, *args, **kwargs):
        """`keras.Model.__call__`; a batch of texts (see the class; not a `tf.data.Dataset`) is packed first, so
        `model(["a text"])` gives the logits of `predict` as a tensor."""
        if args and text_segments(args[0]) is not None:
            args = (self._packed(args[0]),) + args[1:]
        return super().__call__(*args, **kwargs)

    def predict_on_batch(self, x):
        """`keras.Model.predict_on_batch`, taking a batch of texts as `predict` does."""
        return super().predict_on_batch(self._packed(x) if text_segments(x) is not None else x)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """`keras.Model.train_on_batch`, taking a batch of texts and label names as `fit` does."""
        segments = text_segments(x)
        if segments is not None:
            self._record_text_features(segments[0])
            x, y = self._packed(x), self.label_ids(y)
        return super().train_on_batch(x, y, sample_weight=sample_weight, class_weight=class_weight,
                                      return_dict=return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """`keras.Model.test_on_batch`, taking a batch of texts and label names as `evaluate` does."""
        if text_segments(x) is not None:
            x, y = self._packed(x), self.label_ids(y)
        return super().test_on_batch(x, y, sample_weight=sample_weight, return_dict=return_dict)

    def _packed(self, x):
        """A batch of texts (`text_segments`) packed by the preprocessor, eagerly: the encoder's dict of (batch,
        seq_length) int32."""
        import tensorflow as tf

        self._check_preprocessor()
        segments = text_segments(x)[1]
        self._report_truncated(segments)
        return self.preprocessor([tf.constant(segment.tolist(), tf.string) for segment in segments])

    def _counted(self, cut, what):
        """A new `_CutTexts` of `what` (the texts, in words), added to `cut` (a call's list of them)."""
        cut.append(_CutTexts(what))
        return cut[-1]

    def _report_cut(self, cut):
        """Warns of the texts that did not fit, for each `_CutTexts` of a call (see `_mapped`)."""
        for texts in cut:
            texts.report(self.preprocessor.seq_length)

    def _report_truncated(self, segments):
        """Warns when some texts (one or two arrays, the segments) do not fit the preprocessor's length."""
        from official_bert.text.preprocessing import report_truncated

        report_truncated(self.preprocessor, segments, "texts", f"seq_length={self.preprocessor.seq_length}")

    def _check_preprocessor(self):
        if self.preprocessor is None:
            name = type(self).__name__
            raise ValueError(f"{name} got strings but has no preprocessor: build it with {name}.from_pretrained("
                             "path, ...) or pass preprocessor=official_bert.text.load_preprocessor(path, "
                             "seq_length), or pass packed inputs (input_word_ids, input_mask, input_type_ids)")

    def _record_text_features(self, names):
        """The names of the texts `fit` saw become `text_features` (the export's inputs) where none are set."""
        if self.text_features is None:
            self.text_features = tuple(str(name) for name in names)
        elif len(self.text_features) != len(names):
            raise ValueError(f"got {len(names)} text(s) per example, but the model takes {len(self.text_features)} "
                             f"({', '.join(self.text_features)})")

    def label_ids(self, y):
        """`y` (one label per example, or per word) as label ids: strings become their index in `label_names`;
        anything else passes through."""
        y = _as_array(y)
        if y is None or not _is_texts(y) or not len(y):
            return y
        if self.label_names is None:
            raise ValueError(f"got string labels (e.g. {y[0]!r}), but {type(self).__name__} has no label_names; "
                             "pass labels=[...] to from_pretrained, or integer label ids")
        index = {name: i for i, name in enumerate(self.label_names)}
        unknown = sorted({str(label) for label in y if str(label) not in index})
        if unknown:
            raise ValueError(f"labels {unknown[:5]} are not among the model's label_names {list(self.label_names)}")
        return np.array([index[str(label)] for label in y], np.int32)

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """An in-memory `(texts, y, sample_weight)` as a batched `tf.data.Dataset` of packed inputs."""
        import tensorflow as tf

        self._check_preprocessor()
        segments = text_segments(x)[1]
        self._report_truncated(segments)
        texts = tuple(tf.constant(segment.tolist(), tf.string) for segment in segments)  # each (examples,)
        if y is None and sample_weight is not None:
            raise ValueError("sample_weight needs labels (y)")
        parts = (texts,) + tuple(v for v in (self.label_ids(y), sample_weight) if v is not None)
        dataset = tf.data.Dataset.from_tensor_slices(parts)  # (x,) or (x, y[, sample_weight]), x a tuple of texts
        if shuffle:
            dataset = dataset.shuffle(len(texts[0]), reshuffle_each_iteration=True)
        return self._mapped(dataset.batch(batch_size or DEFAULT_BATCH_SIZE))

    def _is_words(self, x):
        """Whether `x` is sentences of words and the model takes them (it then needs its preprocessor)."""
        if not (self.takes_words and is_words(x)):
            return False
        self._check_preprocessor()
        return True

    def _words_dataset(self, sentences, tags=None, sample_weight=None, batch_size=None, shuffle=False):
        """Sentences of words (and their tags) as a batched dataset of packed windows (`task_models.word_windows`)."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not taken with sentences of words (each word's first piece is labeled)")
        return self._windows_dataset(importlib.import_module(TASK_MODELS).word_windows(self, sentences, tags),
                                     batch_size, shuffle)

    def _windows_dataset(self, windows, batch_size, shuffle=False):
        import tensorflow as tf

        parts = (windows.inputs,) if windows.labels is None else (windows.inputs, windows.labels)
        dataset = tf.data.Dataset.from_tensor_slices(parts)
        if shuffle:
            dataset = dataset.shuffle(len(windows), reshuffle_each_iteration=True)
        return dataset.batch(batch_size or DEFAULT_BATCH_SIZE).prefetch(tf.data.AUTOTUNE)

    def _is_text_dataset(self, x):
        import tensorflow as tf

        if not isinstance(x, tf.data.Dataset):
            return False
        spec = x.element_spec
        texts = _dataset_texts(spec[0] if isinstance(spec, tuple) else spec)
        if texts:
            self._check_preprocessor()
        return texts

    def _mapped(self, dataset, cut_texts=None):
        """A batched dataset of texts mapped through the preprocessor, x becoming the encoder's dict of
        (batch, seq_length) int32. As Keras reads a dataset, a tuple element is `(x, y[, sample_weight])`, anything
        else is x; x is a [batch] string Tensor, or a tuple or dict of one or two (a pair).

        Args:
            dataset: the `tf.data.Dataset`.
            cut_texts: a `_CutTexts` that counts the texts the map packs, and those it cuts; None: not counted (texts
                given in memory are counted before, exactly, by `_report_truncated`).
        """
        import tensorflow as tf

        def pack(x):
            texts = list(x.values()) if isinstance(x, dict) else list(x) if isinstance(x, tuple) else [x]
            inputs, truncated = self.preprocessor.pack(texts)  # truncated: bool (batch,)
            if cut_texts is None:
                return inputs
            counted = tf.numpy_function(cut_texts.add, [truncated], tf.bool, stateful=True)
            with tf.control_dependencies([counted]):
                return {name: tf.identity(value) for name, value in inputs.items()}

        plain = tf.autograph.experimental.do_not_convert  # plain TF: no conversion cost at each call
        if isinstance(dataset.element_spec, tuple):
            dataset = dataset.map(plain(lambda x, *rest: (pack(x), *rest)), num_parallel_calls=tf.data.AUTOTUNE)
        else:
            dataset = dataset.map(plain(pack), num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def _validation_dataset(self, validation_data, batch_size, cut):
        """`fit`'s `validation_data` ((texts, y[, sample_weight]) or a dataset) with its texts packed; a dataset's
        are counted in a `_CutTexts` added to `cut`."""
        if self._is_text_dataset(validation_data):
            return self._mapped(validation_data, self._counted(cut, "validation texts read from the dataset"))
        if isinstance(validation_data, tuple) and self._is_words(validation_data[0]):
            return self._words_dataset(*validation_data, batch_size=batch_size)
        if isinstance(validation_data, tuple) and text_segments(validation_data[0]) is not None:
            return self._text_dataset(*validation_data, batch_size=batch_size)
        return validation_data


class _CutTexts:
    """How many texts a map over a `tf.data.Dataset` packed, and how many of those packing cut (see `_mapped`).

    Counted as the pipeline reads them, so read-ahead counts too: a run that stops before the dataset's end (Keras'
    `steps_per_epoch`, an epoch's last prefetched batches) may count a few batches more than the model used; an
    epoch, or validation after each epoch, counts its texts again.

    Args:
        what: the texts, in words ("texts read from the dataset").
    """

    def __init__(self, what):
        self.what = what
        self.texts = 0
        self.cut = 0
        self._lock = threading.Lock()  # tf.data maps batches in parallel

    def add(self, truncated):
        """Counts a batch (bool [batch], True where packing cuts the text); returns it unchanged."""
        with self._lock:
            self.texts += len(truncated)
            self.cut += int(np.count_nonzero(truncated))
        return truncated

    def report(self, seq_length):
        """Warns when some texts were cut (`warn_truncated`), at the packed length `seq_length`."""
        from official_bert.text.preprocessing import warn_truncated

        warn_truncated(self.cut, self.texts, self.what, f"seq_length={seq_length}")


def _split(segments, y, sample_weight, fraction):
    """Keras' `validation_split` on texts: the last `fraction` of the examples is held out.

    Returns: `(x, y, sample_weight, validation_data)`, x a tuple of the kept texts."""
    names, parts = segments
    count = len(parts[0])
    cut = count - int(count * fraction)
    if cut in (0, count):
        raise ValueError(f"validation_split={fraction} of {count} examples leaves no training or validation data")

    def head(v):
        return None if v is None else np.asarray(v)[:cut]

    def tail(v):
        return None if v is None else np.asarray(v)[cut:]

    held = tuple(v for v in (dict(zip(names, [tail(p) for p in parts])), tail(y), tail(sample_weight))
                 if v is not None)
    return dict(zip(names, [head(p) for p in parts])), head(y), head(sample_weight), held
