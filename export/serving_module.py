"""ServingModule: the three signatures every export has, around one task's answer function.

- `serving_default`: raw strings (`text`, and `text_b` for pair tasks; a subclass may name its own, as SQuAD's
  `question`, `context`) -> the task's answer + `truncated`.
- `serve_examples`: a [batch] string Tensor `examples` of serialized `tf.Example`s with the same features
  (bytes features `text`, `text_b`) -> the same answer.
- `serve_tokens`: int32 `input_word_ids` / `input_mask` / `input_type_ids` [batch, seq_length] -> the answer
  computed from the encoder inputs (no `truncated`: nothing is tokenized).

A task module (classifier, tagger, SQuAD, masked LM, encoder) subclasses it and implements
`answer_tokens(inputs)`; it overrides `answer_text(texts)` when the answer needs the tokens' offsets, and
`tflite_answer_text(texts)` when its answer uses string ops TFLite lacks (saved as the
`tflite_serving_default` function, which `export.tflite` converts; it is not a serving signature).

By default no function is XLA-compiled: TF Serving's CPU build refuses jit-compiled functions unless started with
`--xla_cpu_compilation_enabled`, and tokenization cannot be compiled anyway. `export.saved_model --jit_compile`
compiles the model of a classifier's, tagger's or encoder's requests without padding (`export.request_length`).
"""

import os

import tensorflow as tf

from export.preprocessing import parse_text_examples, token_input_specs
from official_bert.models.encoder import ENCODER_INPUTS

SIGNATURES = ("serving_default", "serve_examples", "serve_tokens")


class ServingModule(tf.Module):
    """Base class of the exported modules.

    Args:
        preprocessor: an `official_bert.text.Preprocessor`.
        text_features: the raw-text input names, in order: ("text",), ("text", "text_b"), or SQuAD's
            ("question", "context"); also the `tf.Example` feature names of `serve_examples`.
        assets: file name -> path of files to ship in the SavedModel's `assets/` (vocab, label names).
        name: module name.
        jit_compile: the module XLA-compiles its model for requests without padding on `compiled_signature`
            (`export.request_length`); its warm-up requests then compile every length.
    """

    compiled_signature = "serving_default"  # the signature whose requests `jit_compile` compiles
    compiles_requests = False  # whether it takes `jit_compile` (`export.saved_model --jit_compile`)
    quantizes_word_table = True  # `--precision=int8` quantizes the word-piece table (not a decoder's)
    reads_windows = False  # whether `from_model_dir` takes `max_windows` (`export.saved_model --max_windows`)
    answers_top_k = False  # whether `from_model_dir` uses `top_k` (`export.saved_model --top_k`)

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """The module serving a model_dir of its kind (`official_bert.task_kinds.TaskKind.serving_module`).

        Args:
            loaded: the `official_bert.model_dir.LoadedModelDir` (its model quantized as asked).
            seq_length: the packed length.
            assets: the tokenizer files, file name -> path (a module adds its own).
            staging_dir: a directory for the asset files written on the way (must live until the save).
            top_k: masked-LM modules: candidates per mask (None: their default).
            jit_compile: see `compiles_requests`.
        """
        raise NotImplementedError

    @classmethod
    def preprocessor_for(cls, loaded, seq_length):
        """The raw-text preprocessor of a `LoadedModelDir`: its tokenizer, casing and family's packing."""
        from official_bert.text.preprocessing import text_preprocessor

        return text_preprocessor(loaded.vocab_file, loaded.lower_case, seq_length)

    def __init__(self, preprocessor, text_features, assets, name=None, jit_compile=False):
        super().__init__(name=name)
        self.jit_compile = bool(jit_compile)
        text_features = tuple(text_features)
        if not text_features or len(set(text_features)) < len(text_features) or not all(
                f.isidentifier() for f in text_features):
            raise ValueError(f"text_features must be distinct names, e.g. ('text', 'text_b'), got {text_features!r}")
        self.preprocessor = preprocessor
        self.text_features = text_features
        self.assets = {name: tf.saved_model.Asset(path) for name, path in assets.items()}

        # Positional inputs named by their specs: the signature's input names are the feature names, in order.
        text_specs = [tf.TensorSpec([None], tf.string, name=feature) for feature in self.text_features]

        def serve(*texts):
            return self.answer_text(list(texts))

        def serve_lite(*texts):
            return self.tflite_answer_text(list(texts))

        def serve_examples(examples):  # calls serving_default's function: the SavedModel stores the model once
            return self.serving_default(*parse_text_examples(examples, self.text_features))

        def serve_tokens(input_word_ids, input_mask, input_type_ids):
            return self.answer_tokens({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                       "input_type_ids": input_type_ids})

        token_specs = token_input_specs(preprocessor.seq_length)
        # Traced as written, without AutoGraph (every export module's functions): no serving code branches or loops
        # in Python on a tensor, and converting the preprocessing and answer code took 15% of a tiny export's time.
        self.serving_default = tf.function(serve, input_signature=text_specs, autograph=False)
        self.serve_examples = tf.function(serve_examples, autograph=False,
                                          input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        self.serve_tokens = tf.function(serve_tokens, input_signature=[token_specs[k] for k in ENCODER_INPUTS],
                                        autograph=False)
        overridden = type(self).tflite_answer_text is not ServingModule.tflite_answer_text
        self.tflite_serving_default = tf.function(serve_lite, input_signature=text_specs, autograph=False) \
            if overridden else self.serving_default

    @property
    def seq_length(self):
        return self.preprocessor.seq_length

    def signatures(self):
        """The serving signatures, name -> tf.function, for `tf.saved_model.save`."""
        return {name: getattr(self, name) for name in SIGNATURES}

    def saved_object(self):
        """What `tf.saved_model.save` writes: the object (its functions, assets and plain `tf.Variable`s) and the
        serving signatures, name -> function.

        Saving the module itself would also save its Keras layers, whose Keras 3 variables each export a second
        variable handle: the signatures read one and TF Serving's session-based loader (and `saved_model_cli
        run`) restores the other, so every request fails with "Could not find variable". Keras' own
        `ExportArchive` avoids this the same way: the saved object holds only the `tf.Variable`s the functions
        read, one handle each, restored by the saver.

        Each function is traced once, here, to find those variables; the object holds a function that calls that
        trace (`_calling`), so `tf.saved_model.save` does not trace the model a second time.

        Returns:
            `(root, signatures)`: a `tf.Module`, and `signatures()`'s names -> its functions.
        """
        functions = {**self.signatures(), "tflite_serving_default": self.tflite_serving_default}
        root = tf.Module(name=self.name)
        variables = {}
        for name, function in functions.items():
            traced = function.get_concrete_function()
            setattr(root, name, _calling(traced))
            for variable in traced.variables:  # what the traced graph captures
                variables[id(variable)] = variable
        root.weights = list(variables.values())
        root.assets = dict(self.assets)
        return root, {name: getattr(root, name) for name in self.signatures()}

    def warmup_requests(self):
        """The warm-up requests `export.saved_model.save` writes: `export.warmup.warmup_requests`, and with
        `jit_compile` one single text on `compiled_signature` at each length XLA compiles a program for, so that
        TF Serving compiles them when it loads the model, not on live requests."""
        from export.request_length import single_text_warmup_requests
        from export.warmup import warmup_requests

        extra = single_text_warmup_requests(self.compiled_signature, self.text_features, self.seq_length) \
            if self.jit_compile else []
        return warmup_requests(self) + extra

    def warmup_texts(self):
        """Real example texts for the warm-up requests: input name -> list of str (see `export.warmup`)."""
        from export.warmup import SAMPLE_SECOND_TEXTS, SAMPLE_TEXTS

        return {name: list(SAMPLE_TEXTS if i == 0 else SAMPLE_SECOND_TEXTS)
                for i, name in enumerate(self.text_features)}

    def answer_tokens(self, inputs):
        """The task's outputs from packed encoder inputs (dict of int32 [batch, seq]); a dict of Tensors."""
        raise NotImplementedError

    def answer_text(self, texts):
        """The task's outputs for raw strings (a list of [batch] string Tensors), with `truncated` [batch] bool."""
        inputs, truncated = self.preprocessor.pack(texts)
        return {**self.answer_tokens(inputs), "truncated": truncated}

    def tflite_answer_text(self, texts):
        """`answer_text` with only TFLite-convertible ops; by default `answer_text` itself."""
        return self.answer_text(texts)


def _calling(traced):
    """A `tf.function` with the inputs of the concrete function `traced` that calls it.

    `tf.saved_model.save` traces every function it saves again inside its own save context (a different cache key
    from a trace made outside it): a function that calls `traced` costs it one call op, where the original
    `tf.function` would trace the whole model a second time.
    """
    specs = traced.structured_input_signature[0]  # the positional TensorSpecs, named after the inputs
    return tf.function(lambda *inputs: traced(*inputs), input_signature=specs, autograph=False)


def with_labels_file(assets, label_names, staging_dir):
    """`assets` with `labels.txt` (one label name a line, written in `staging_dir`) when there are label names."""
    if not label_names:
        return assets
    path = os.path.join(staging_dir, "labels.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"{name}\n" for name in label_names))
    return {**assets, "labels.txt": path}
