"""Task: what a fine-tuning task supplies to the runner; the runner (`official_bert.runner.run`) does the rest.

A task is plain Python: its constructor takes the task's own settings (data files, label scheme, answer
lengths, ...); the runner passes it the shared `RunConfig` and, once the model_dir is set up, a `RunContext`
(the BERT config, vocab, casing, tokenizer and where to write). No registry: a CLI builds its task and calls
`run(task, config)`.
"""

import os

from official_bert import model_dir, owned_files
# (tasks import the tokenizer kinds from here)
from official_bert.tokenizer_kinds import BPE, SENTENCEPIECE, TOKENIZER_KINDS, WORDPIECE  # noqa: F401

# A training split where fewer than this share of the examples read can be trained on is an error.
MIN_USABLE_SHARE = 0.5


def check_training_examples(source, usable, read, what="examples", why="unusable"):
    """Refuses a training split with nothing to train on, or where most examples were dropped.

    Args:
        source: the file (or dataset name) read.
        usable: how many examples (or windows) training gets.
        read: how many examples the source held.
        what: what is counted ("examples", "questions", "sentences").
        why: why the others were dropped (for the message).

    Raises:
        ValueError: naming the source and the counts.
    """
    if read == 0:
        raise ValueError(f"{source}: no training {what}; an empty training split would give an untrained model")
    if usable == 0 or usable < MIN_USABLE_SHARE * read:
        raise ValueError(f"{source}: only {usable} of {read} training {what} can be trained on ({read - usable} "
                         f"{why}); at least {MIN_USABLE_SHARE:.0%} must be")


def checked_steps_per_loop(steps_per_loop):
    """`steps_per_loop` (a task's training steps per call into TensorFlow) as given; ValueError, naming the flag,
    unless it is at least 1 (0 would divide the run's steps by zero)."""
    if steps_per_loop < 1:
        raise ValueError(f"--steps_per_loop must be at least 1, got {steps_per_loop}")
    return steps_per_loop


def predictions_path(results_dir, file_name):
    """The path of `file_name` in `results_dir/predictions/`, a folder it records as official-bert's and makes.

    Args:
        results_dir: where the run writes results (`RunContext.results_dir`).
        file_name: the prediction file's name.
    """
    folder = owned_files.claim(results_dir, "predictions")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, file_name)


class Task:
    """Base class of the task objects.

    Attributes:
        kind: the model_dir kind (`official_bert.model_dir.KINDS`): which model serves it and which export
            module (`export.saved_model`) serves the model_dir.
        uses_pooler: False when the task's head ignores the pooler, so a checkpoint without one loads.
        init_heads: which directory of a model_dir of ours an init checkpoint points to (`encoder/`, or
            `pretrainer/` for pre-training's heads).
        needs_init_checkpoint: False when the model may start from scratch (`model_config()` shapes it).
        needs_vocab: False when the task reads no text (pre-training on TFRecords).
        tokenizer_kinds: the tokenizers the task's data and predictions work with, of
            `official_bert.tokenizer_kinds.TOKENIZER_KINDS` ("wordpiece": BERT and DistilBERT, "bpe": RoBERTa's
            byte-level BPE, "sentencepiece": ALBERT's). A task that uses only `RunContext.text_preprocessor()` takes
            all three; one that needs WordPiece's `##` pieces or token offsets lists those it handles.
        steps_per_loop: training steps per call into TensorFlow (Keras' `steps_per_execution`).
    """

    kind = None
    uses_pooler = True
    init_heads = model_dir.ENCODER_DIR
    needs_init_checkpoint = True
    needs_vocab = True
    tokenizer_kinds = (WORDPIECE,)
    steps_per_loop = 1

    def model_config(self):
        """The `BertConfig` the task asks for; None (the default): the init checkpoint's."""
        return None

    def model_source(self, config):
        """Where the trained model starts from, for the log: the init checkpoint (the default), or "from scratch"."""
        return config.init_checkpoint or "from scratch"

    def validate(self, config):
        """Checks the task's settings against the run's (`RunConfig`); raises ValueError naming the flag.
        Called before anything is read or written."""

    def read_data(self, config, bert_config):
        """Reads (and keeps) every split the run needs, so a bad file fails before anything is written.

        Args:
            config: the `RunConfig`.
            bert_config: the model's `BertConfig`, as the runner resolved it.

        Raises:
            ValueError: a split to train on is empty, or a file is malformed (named).
        """
        raise NotImplementedError

    def task_info(self):
        """The task's facts for task.json (name, labels, ...), besides the sequence length and casing."""
        raise NotImplementedError

    def train_sources(self):
        """The training data: file paths (their sizes and SHA-256 go into run.json) or names (a TFDS split), so
        a later run on other data is not taken for a resume."""
        return []

    def training_settings(self):
        """The task's own settings that change what training learns (e.g. SQuAD's doc stride), for run.json;
        default none."""
        return {}

    def run_settings(self):
        """Settings recorded in task.json that a later run into the same model_dir may change (e.g. SQuAD's
        answer lengths and null-score threshold, which export reads); default none."""
        return {}

    def build_model(self, bert_config, train_on_real_tokens=True):
        """The untrained task model of the kind (a Keras model with an `encoder` attribute); `train_on_real_tokens`:
        see `model_dir.build_task_model`."""
        return model_dir.build_task_model(self.kind, bert_config, self.task_info(),
                                          train_on_real_tokens=train_on_real_tokens)

    @classmethod
    def for_teacher(cls, info, flags):
        """The task of a teacher model_dir (`tasks.distill`, `tasks.prune`), or None (the default) when the kind
        is not distilled.

        Args:
            info: the teacher's task.json.
            flags: the command's data settings, as attributes (`data_dir`, `train_file`, ...: `tasks.distill`'s
                flags).
        """
        return None

    def load_initial_weights(self, model, checkpoint):
        """Loads the encoder (and the head when `checkpoint` has it) from a checkpoint directory; returns what
        was loaded, for the log ("head loaded" / "head freshly initialised")."""
        from official_bert.checkpoints import load_task_weights
        from official_bert.checkpoints.heads import head_specs, hf_class_name
        from official_bert.checkpoints.loading import checkpoint_label_names, follow_label_names

        loaded = load_task_weights(model.encoder, head_specs(model), checkpoint, optional_pooler=not self.uses_pooler,
                                   head_class=hf_class_name(model))
        if loaded:
            follow_label_names(model, checkpoint_label_names(checkpoint), self.task_info().get("label_names"),
                               checkpoint)
        return "head loaded" if loaded else "head freshly initialised"

    def describe_run(self, context):
        """A line for the log before training; None (the default): nothing."""
        return None

    def train_dataset(self, context):
        """`(num_examples, make_dataset)`: the training examples (windows) of one epoch, and
        `make_dataset(batch_size) -> tf.data.Dataset`, the infinite, deterministic stream of training batches
        (shuffled with the run's seed; the runner skips what a resumed run has trained, and under multi-worker
        training gives each worker its share of every global batch). Called before anything is written; raises
        ValueError (`check_training_examples`) when the split has nothing, or too little, to train on."""
        raise NotImplementedError

    def train_steps(self, config, num_examples):
        """(total steps, warmup steps); default: `RunConfig.train_steps` over the epoch's examples."""
        return config.train_steps(num_examples)

    def resumable_stream(self, make_batches, context):
        """`make_dataset(skip_batches)` for `training.fit_resumable`; default: `run_process.resumable_stream`."""
        from official_bert.run_process import resumable_stream

        return resumable_stream(make_batches, context.strategy, context.config)

    def compile_options(self):
        """Extra `Model.compile` keyword arguments; default: `steps_per_execution`, the task's `steps_per_loop`."""
        return {"steps_per_execution": self.steps_per_loop}

    def fit_options(self, total_steps):
        """Extra `training.fit_resumable` keyword arguments (callbacks, verbose); default none."""
        return {}

    def save(self, model, context):
        """Writes the trained model into `context.out_dir`; default: `run_model_dir.save_trained`."""
        from official_bert.run_model_dir import save_trained

        save_trained(model, context.out_dir, context.vocab_file, context.lower_case)

    def evaluate(self, model, context):
        """The evaluation results (a JSON-able dict), or None when there is nothing to evaluate."""
        raise NotImplementedError

    def describe_results(self, results):
        """One line for the user: the headline figures of `evaluate`'s results."""
        return "eval results: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                            for k, v in sorted(results.items()) if not isinstance(v, (dict, list)))

    def predict(self, model, context):
        """Writes the task's prediction files into `context.results_dir`."""
        raise NotImplementedError
