"""The settings of a run (`RunConfig`) and what the runner resolved from them for the task (`RunContext`)."""

import dataclasses
import math
from typing import Optional


@dataclasses.dataclass
class RunConfig:
    """The settings every fine-tuning run shares (the task's own settings live in its task object).

    Attributes:
        model_dir: where config, vocab, checkpoints, logs and results go.
        init_checkpoint: a Hugging Face or Google BERT directory, a model_dir of ours, or a Hugging Face hub id
            (`checkpoints.hub.checkpoint_path`).
        vocab_file: WordPiece vocab (RoBERTa: its vocab.json, merges.txt beside it); None: found in the init
            checkpoint's directory.
        do_lower_case: casing; None: from the checkpoint (a model_dir of ours: its task.json).
        max_seq_length: packed sequence length.
        train_batch_size / eval_batch_size: global batch sizes.
        learning_rate: peak learning rate; warmup_proportion of the steps warm up linearly, then linear decay.
        num_train_epochs: epochs, unless num_train_steps is set.
        weight_decay: decoupled weight decay (not on LayerNorm and biases).
        optimizer: "adamw" or "lamb"; adam_epsilon its epsilon.
        jit_compile: XLA; None: on GPU/TPU only.
        train_on_real_tokens: the task model's constructor argument `train_on_real_tokens` (classifiers, taggers
            and span labelers train on each batch's real tokens only, on TensorFlow without XLA;
            `RealTokenTraining.trains_on_real_tokens`).
        mixed_precision: None, "float16" or "bfloat16".
        distribution_strategy: one_device, mirrored, multi_worker_mirrored or tpu (tpu: the TPU address).
        checkpoint_steps: steps between checkpoints (a restarted run resumes there).
        keep_checkpoints: how many of the latest checkpoints are kept (at least 1).
        seed: initialisation, shuffling and dropout.
        deterministic: TensorFlow's op determinism: two runs of one command, and a resumed run and an unbroken
            one, end with bit-identical weights (docs/classification.md: what it costs).
        do_train / do_eval / do_predict: what to do.
        output_dir: where evaluation results and predictions go; None: the model_dir.
        overwrite: a training run deletes an earlier run's files in the model_dir instead of refusing a run
            that differs from it.
    """
    model_dir: str
    init_checkpoint: Optional[str] = None
    vocab_file: Optional[str] = None
    do_lower_case: Optional[bool] = None
    max_seq_length: int = 128
    train_batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    num_train_steps: Optional[int] = None
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    adam_epsilon: float = 1e-6
    jit_compile: Optional[bool] = None
    train_on_real_tokens: bool = True
    mixed_precision: Optional[str] = None
    distribution_strategy: str = "one_device"
    tpu: Optional[str] = None
    checkpoint_steps: int = 500
    keep_checkpoints: int = 1
    seed: int = 42
    deterministic: bool = False
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    output_dir: Optional[str] = None
    overwrite: bool = False

    def train_steps(self, num_examples):
        """(total steps, warmup steps) from num_train_steps, or num_train_epochs over `num_examples`."""
        steps = self.num_train_steps or math.ceil(num_examples * self.num_train_epochs / self.train_batch_size)
        return steps, int(steps * self.warmup_proportion)

    def uses_xla(self):
        """Whether the model compiles with XLA: `jit_compile`, or when None, on GPUs and TPUs."""
        from official_bert.training import default_jit_compile

        return default_jit_compile() if self.jit_compile is None else self.jit_compile


@dataclasses.dataclass
class RunContext:
    """What the runner resolved, handed to the task's data, evaluation and prediction methods.

    Attributes:
        config: the `RunConfig`.
        bert_config: the model's `BertConfig`.
        vocab_file: the vocab this run uses (the model_dir's copy).
        lower_case: the casing this run uses.
        tokenizer: a `BertTokenizer` of the two (None for a task with no vocab, e.g. pre-training on TFRecords).
        out_dir: where this process writes the trained model (the model_dir, or a non-chief worker's temporary
            directory).
        results_dir: where this process writes evaluation results and predictions (`--output_dir`, else
            `out_dir`).
        is_chief: whether this process writes the run's results.
        strategy: the `tf.distribute` strategy.
    """
    config: RunConfig
    bert_config: object
    vocab_file: str
    lower_case: bool
    tokenizer: object
    out_dir: str
    results_dir: str
    is_chief: bool
    strategy: object

    def text_preprocessor(self):
        """A `Preprocessor` of the run's vocab, casing and sequence length (raw strings -> encoder inputs)."""
        from official_bert.text.preprocessing import text_preprocessor

        return text_preprocessor(self.vocab_file, self.lower_case, self.config.max_seq_length, self.tokenizer)
