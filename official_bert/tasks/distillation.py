"""DistillationTask: a fine-tuned teacher model_dir distilled into a smaller student of the same task, for the
runner.

The task wraps the teacher's own task (classification, tagging, SQuAD: its data, head, metrics and predictions)
and changes only what is trained: the model is a `compression.Distiller` of a student (the teacher's embeddings
and chosen layers, or a fresh model of a config) and the frozen teacher; the model_dir it writes is the student's,
a normal model_dir of the teacher's kind that evaluation, export and `--init_checkpoint` take.
"""

import logging
import os

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert.task_kinds import task_kind
from official_bert.tasks.base import Task

logger = logging.getLogger(__name__)


class DistillationTask(Task):
    """Distils `teacher_dir`'s model into a student, training on `task`'s data.

    Args:
        task: the teacher's task object (`ClassificationTask`, `TaggingTask`, `SquadTask`) with its data settings.
        teacher_dir: a finished model_dir of that task's kind.
        student_layers: teacher layer indices ("0,2,4" or a list) the student is cut from: it keeps the teacher's
            width, embeddings, those layers (in order), pooler and head.
        student_config: instead of `student_layers`, a `bert_config.json` of a fresh student (same vocab as the
            teacher's; any depth and width); its layers imitate the teacher's uniformly spaced ones.
        alpha: weight of the task loss; 1 - alpha weighs the soft-target KL.
        temperature: softmax temperature of the soft targets.
        hidden_weight: weight of the hidden-state MSE between mapped layers (0: off).
        attention_weight: weight of the attention-score MSE between mapped layers (TinyBERT; 0: off).
        target_sparsity: magnitude-prune the student's transformer kernels to this share of zeros along a
            polynomial schedule while it trains (0: off); `sparsity.json` in the model_dir reports it per kernel.
        pruned_heads: with `student_layers`, attention heads the student lacks (student layer -> original head
            indices, `BertConfig.pruned_heads`); the copy from the teacher takes the kept heads' slices.
        cache_teacher: run the teacher once over the first epoch and train on its stored logits
            (`compression.teacher_cache`) instead of a teacher pass in every step; the logits losses only.
    """

    needs_init_checkpoint = True

    def __init__(self, task, teacher_dir, student_layers=None, student_config=None, alpha=0.5, temperature=2.0,
                 hidden_weight=0.0, target_sparsity=0.0, pruned_heads=None, attention_weight=0.0,
                 cache_teacher=False):
        import dataclasses

        from official_bert.compression.distiller import check_settings
        from official_bert.compression.student import parse_layers, student_config as cut_config, uniform_layer_map
        from official_bert.config import BertConfig

        check_settings(alpha, temperature, hidden_weight, attention_weight)
        if cache_teacher and (hidden_weight > 0 or attention_weight > 0):
            raise ValueError("--cache_teacher stores the teacher's logits only; the hidden-state and attention losses "
                             "(--hidden_weight, --attention_weight) need its layers in every step")

        self.task, self.teacher_dir = task, teacher_dir
        self.kind, self.uses_pooler = task.kind, task.uses_pooler
        self.tokenizer_kinds = task.tokenizer_kinds
        for name in (model_dirs.CONFIG_FILE, model_dirs.WEIGHTS_FILE):
            if not os.path.isfile(os.path.join(teacher_dir, name)):
                raise FileNotFoundError(f"--teacher={teacher_dir}: no {name}; pass a model_dir whose training finished")
        self.teacher_info = model_dirs.read_task_info(teacher_dir)
        if self.teacher_info["kind"] != task.kind:
            raise ValueError(f"--teacher={teacher_dir} is a {self.teacher_info['kind']} model_dir; this run's task is "
                             f"{task.kind}")
        self.teacher_config = BertConfig.from_json_file(os.path.join(teacher_dir, model_dirs.CONFIG_FILE))
        if (student_layers is None) == (student_config is None):
            raise ValueError("pass one of --student_layers (teacher layers to keep) and --student_config")
        teacher_depth = self.teacher_config.num_hidden_layers
        if student_config is None:
            self.layers = student_layers if isinstance(student_layers, list) else parse_layers(student_layers,
                                                                                                 teacher_depth)
            self.student_bert_config = cut_config(self.teacher_config, self.layers)
            if pruned_heads:
                self.student_bert_config = dataclasses.replace(self.student_bert_config, pruned_heads=pruned_heads)
            self.layer_map = self.layers
        elif pruned_heads:
            raise ValueError("pruned_heads applies to a student cut from the teacher (student_layers)")
        else:
            self.layers = None
            self.student_bert_config = BertConfig.from_json_file(student_config)
            if self.student_bert_config.vocab_size != self.teacher_config.vocab_size:
                raise ValueError(f"--student_config={student_config}: vocab_size {self.student_bert_config.vocab_size}"
                                 f", but the teacher's is {self.teacher_config.vocab_size}; the student reads the "
                                 "teacher's vocab")
            self.layer_map = uniform_layer_map(self.student_bert_config.num_hidden_layers, teacher_depth)
        self.student_config_file = student_config
        self.alpha, self.temperature, self.hidden_weight = alpha, temperature, hidden_weight
        self.attention_weight = attention_weight
        if not 0.0 <= target_sparsity < 1.0:
            raise ValueError(f"--target_sparsity={target_sparsity} must be in [0, 1)")
        self.target_sparsity = target_sparsity
        self.cache_teacher = cache_teacher
        self._num_train_examples = None  # set by train_dataset, for the teacher cache
        self._distiller = None  # built by build_model; the pruning callback needs its student

    def model_source(self, config):
        return f"a student of {self.teacher_dir}"

    def model_config(self):
        return self.student_bert_config

    def validate(self, config):
        if not config.do_train:
            raise ValueError("distillation trains a student: --do_train must be true (evaluate a distilled model_dir "
                             "with its task's own entry point, e.g. tasks.run_classifier --do_train=false)")
        if os.path.abspath(config.init_checkpoint or "") != os.path.abspath(self.teacher_dir):
            raise ValueError(f"--init_checkpoint={config.init_checkpoint} must be the teacher ({self.teacher_dir})")
        self.task.validate(config)

    def read_data(self, config, bert_config):
        """Reads the task's data and checks that it is the teacher's task (same task name, labels, ...)."""
        self.task.read_data(config, bert_config)
        for key, value in self.task.task_info().items():
            if key in self.teacher_info and self.teacher_info[key] != value:
                raise ValueError(f"{os.path.join(self.teacher_dir, model_dirs.TASK_FILE)}: field '{key}' is "
                                 f"{self.teacher_info[key]!r}, but this run's data has {value!r}")

    def task_info(self):
        return self.task.task_info()

    def train_sources(self):
        return self.task.train_sources()

    def training_settings(self):
        return {**self.task.training_settings(),
                "distillation": {"teacher": os.path.abspath(self.teacher_dir), "student_layers": self.layers,
                                 "student_config": self.student_config_file, "alpha": self.alpha,
                                 "temperature": self.temperature, "hidden_weight": self.hidden_weight,
                                 "attention_weight": self.attention_weight,
                                 "target_sparsity": self.target_sparsity,
                                 **({"pruned_heads": self.student_bert_config.to_dict()["pruned_heads"]}
                                    if self.student_bert_config.pruned_heads else {})}}

    def run_settings(self):
        return self.task.run_settings()

    def build_model(self, bert_config, train_on_real_tokens=True):
        from official_bert.compression.distiller import Distiller

        student = self.task.build_model(bert_config, train_on_real_tokens=train_on_real_tokens)
        teacher = model_dirs.build_task_model(self.kind, self.teacher_config, self.teacher_info)
        self._distiller = Distiller(student, teacher, alpha=self.alpha, temperature=self.temperature,
                                    hidden_weight=self.hidden_weight, layer_map=self.layer_map,
                                    attention_weight=self.attention_weight)
        return self._distiller

    def load_initial_weights(self, model, checkpoint):
        """Loads the teacher's trained weights, then copies its embeddings, chosen layers, pooler and head into the
        student (a student of `--student_config` starts fresh)."""
        from official_bert.compression.student import copy_teacher_weights

        model_dirs.load_weights(model.teacher, self.teacher_dir)
        if self.layers is None:
            return f"teacher loaded; fresh {self.student_bert_config.num_hidden_layers}-layer student"
        copy_teacher_weights(model.student, model.teacher, self.layers)
        return f"teacher loaded; student initialised from its embeddings, layers {self.layers} and head"

    def describe_run(self, context):
        student = self.student_bert_config
        heads = ""
        if student.pruned_heads:
            kept = sum(student.num_kept_heads(i) for i in range(student.num_hidden_layers))
            heads = f" keeping {kept} of {student.num_hidden_layers * student.num_attention_heads} attention heads"
        return (f"Distilling {self.teacher_dir} ({self.teacher_config.num_hidden_layers} layers) into a "
                f"{student.num_hidden_layers}-layer student{heads}: alpha={self.alpha}, T={self.temperature}, "
                f"hidden_weight={self.hidden_weight}, attention_weight={self.attention_weight}"
                + (", teacher logits cached once" if self.cache_teacher else ""))

    def train_dataset(self, context):
        num_examples, make_batches = self.task.train_dataset(context)
        self._num_train_examples = num_examples
        return num_examples, make_batches

    def train_steps(self, config, num_examples):
        return self.task.train_steps(config, num_examples)

    def resumable_stream(self, make_batches, context):
        """The task's stream; with `cache_teacher`, its batches carry the teacher's logits, cached on first use."""
        if self.cache_teacher and self.alpha < 1.0:  # (alpha 1 trains on the labels alone)
            make_batches = self._with_teacher_logits(make_batches, context.config.max_seq_length)
        return self.task.resumable_stream(make_batches, context)

    def _with_teacher_logits(self, make_batches, seq_length):
        """`make_batches` whose batches carry `teacher_cache.TEACHER_LOGITS`; the first call runs the teacher."""
        from official_bert.compression.teacher_cache import build_teacher_cache

        cache = None

        def make_batches_with_logits(batch_size):
            nonlocal cache
            if cache is None:
                cache = build_teacher_cache(self._distiller.teacher, make_batches(batch_size),
                                            self._num_train_examples, batch_size, seq_length,
                                            per_piece=task_kind(self.kind).logits_per_piece)
            return cache.attach(make_batches(batch_size))

        return make_batches_with_logits

    def compile_options(self):
        return self.task.compile_options()

    def fit_options(self, total_steps):
        from official_bert.compression.pruning import MagnitudePruning

        options = dict(self.task.fit_options(total_steps))
        if self.target_sparsity:
            pruning = MagnitudePruning(self._distiller.student, total_steps, self.target_sparsity)
            options["callbacks"] = [*options.get("callbacks", ()), pruning]
        return options

    def save(self, model, context):
        """The student's model_dir files; with magnitude pruning, `sparsity.json` (share of zeros per kernel)."""
        from official_bert.compression.pruning import sparsity_report

        self.task.save(model.student, context)
        if self.target_sparsity:
            report = sparsity_report(model.student)
            model_dirs.write_json(owned_files.claim(context.out_dir, "sparsity.json"), report)
            logger.info("Sparsity of the transformer kernels: %.3f (per kernel: sparsity.json)", report["total"])

    def evaluate(self, model, context):
        return self.task.evaluate(model.student, context)

    def describe_results(self, results):
        return self.task.describe_results(results)

    def predict(self, model, context):
        self.task.predict(model.student, context)
