"""Prunes a fine-tuned model_dir (classification, tagging or SQuAD): drops its least important layers or attention
heads (structured: smaller and faster), and/or magnitude-prunes its kernels to a target sparsity, fine-tuning it
(distilled from the unpruned model) into a new model_dir.

    python -m tasks.prune --teacher=out/sst2 --keep_layers=4 --data_dir=../shared/data/glue/SST-2 \
        --model_dir=out/sst2_pruned
    python -m tasks.prune --teacher=out/sst2 --prune_heads=0.5 --data_dir=../shared/data/glue/SST-2 \
        --model_dir=out/sst2_heads
    python -m tasks.prune --teacher=out/sst2 --target_sparsity=0.5 --data_dir=../shared/data/glue/SST-2 \
        --model_dir=out/sst2_sparse
    python -m tasks.prune --teacher=out/conll --prune_heads=0.5 --data_dir=../shared/data/conll2003/hf-iob2 \
        --model_dir=out/conll_heads
    python -m tasks.prune --teacher=out/squad --keep_layers=4 --train_file=train-v1.1.json \
        --predict_file=dev-v1.1.json --model_dir=out/squad_pruned

A layer's importance is how much the task loss on the first --importance_examples examples of the evaluation data
(GLUE dev, the CoNLL --eval_split, SQuAD's --predict_file) rises when that layer is left out; the --keep_layers most
important ones are kept, as `tasks.distill --student_layers` would (the flags of `tasks.distill` apply: --alpha,
--temperature, --num_train_steps, ...). `importance.json` in --model_dir records the scores; with --target_sparsity,
`sparsity.json` the share of zeros per kernel. Magnitude pruning leaves the kernels' shapes as they are: the model
is smaller only compressed (zeros compress), and not faster on CPU (dense matmuls do not skip zeros). Flags that
prune nothing (none of the three, `--prune_heads=0`, `--keep_layers` of every layer) are refused: the run would
train a full copy of the teacher.

With --prune_heads, a head's importance is Michel et al.'s (2019) |gradient of the dev loss with respect to a gate on
the head|, summed over the same dev batches; that share of the (kept layers') heads, least important first, is
removed (at least one head stays in every layer), as transformers' `prune_heads` does: the student's
`bert_config.json` holds `pruned_heads` and its attention kernels only the kept heads. `importance.json` records
the scores and the heads removed. transformers 4.x loads the student's `encoder/` export pruned; transformers 5
dropped head pruning and cannot build those shapes.
"""

from absl import app, flags

from tasks import distill

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(distill)  # tasks.distill's flags (and the run flags) are this entry point's too
flags.DEFINE_integer("keep_layers", None, "Transformer layers kept (the most important on dev data); default: all.")
flags.DEFINE_float("target_sparsity", 0.0, "Share of the transformer kernels' weights set to zero by magnitude, "
                   "reached along a polynomial schedule during fine-tuning; 0: off.")
flags.DEFINE_float("prune_heads", 0.0, "Share of all attention heads removed (the least important on dev data; "
                   "at least one kept per layer); 0: off.")
flags.DEFINE_integer("importance_examples", 256, "Evaluation examples (GLUE dev examples, CoNLL sentences, SQuAD "
                     "questions) the layer and head importance are measured on.")


def main(argv):
    from official_bert import model_dir as model_dirs
    from official_bert import owned_files
    from official_bert.compression.pruning import (head_importance, heads_to_prune, layer_importance, layers_to_keep,
                                                   pruned_config)
    from official_bert.compression.student import student_config
    from official_bert.runner import run
    from official_bert.tasks.distillation import DistillationTask

    distill.check_command_line(argv)
    if FLAGS.student_layers or FLAGS.student_config:
        raise app.UsageError("tasks.prune chooses the layers itself: pass --keep_layers, not --student_layers / "
                             "--student_config")
    loaded = model_dirs.load_model_dir(FLAGS.teacher)
    if not 0.0 <= FLAGS.prune_heads < 1.0:
        raise app.UsageError(f"--prune_heads={FLAGS.prune_heads} must be in [0, 1)")
    if FLAGS.prune_heads and loaded.config.family.shared_layers:
        raise app.UsageError(f"--teacher={FLAGS.teacher} is an ALBERT model: its layers share their heads, which "
                             "cannot be pruned per layer")
    task = distill.teacher_task(loaded.info)
    depth = loaded.config.num_hidden_layers
    layers = list(range(depth))
    importance = {}
    cuts_layers = FLAGS.keep_layers is not None and FLAGS.keep_layers != depth
    _check_something_is_pruned(cuts_layers, depth)
    batches = task.labeled_eval_batches(loaded, FLAGS.importance_examples) if cuts_layers or FLAGS.prune_heads else None
    if cuts_layers:
        scores = layer_importance(loaded.model, lambda config: model_dirs.build_task_model(
            loaded.kind, config, loaded.info), batches)
        layers = layers_to_keep(scores, FLAGS.keep_layers)
        print(f"layer importance (dev loss increase without the layer): {[round(s, 4) for s in scores]}; keeping "
              f"{layers}")
        importance.update(loss_increase=scores, kept=layers)
    settings = dict(student_layers=layers, alpha=FLAGS.alpha, temperature=FLAGS.temperature,
                    hidden_weight=FLAGS.hidden_weight, attention_weight=FLAGS.attention_weight,
                    target_sparsity=FLAGS.target_sparsity, cache_teacher=FLAGS.cache_teacher)
    if FLAGS.prune_heads:
        rated = sum(loaded.config.num_kept_heads(j) for j in layers)
        if round(FLAGS.prune_heads * rated) == 0:
            raise app.UsageError(f"--prune_heads={FLAGS.prune_heads:g} of the {rated} heads rounds to none: nothing "
                                 f"would be pruned; pass a share of at least {1 / rated:.3g} (one head)")
        scores = head_importance(loaded.model, batches)
        removed = heads_to_prune([scores[j] for j in layers], FLAGS.prune_heads)  # by student layer
        pruned_heads = pruned_config(student_config(loaded.config, layers), removed).pruned_heads
        rounded = [[round(s, 4) for s in row if s is not None] for row in scores]
        print(f"head importance (|dL/d gate|, per layer): {rounded}; removing {removed}")
        importance.update(head_importance=scores, head_importance_method="michel2019_gate_gradient",
                          removed_heads={str(k): v for k, v in removed.items()},
                          pruned_heads={str(k): v for k, v in pruned_heads.items()})
        settings["pruned_heads"] = pruned_heads
    run(DistillationTask(task, FLAGS.teacher, **settings), distill.student_run_config(loaded.max_seq_length))
    if importance:
        model_dirs.write_json(owned_files.claim(FLAGS.model_dir, "importance.json"), importance)


def _check_something_is_pruned(cuts_layers, depth):
    """Refuses flags that prune nothing (the run would train a full copy of the teacher), naming them."""
    if cuts_layers or FLAGS.prune_heads or FLAGS.target_sparsity:
        return
    said = [f"--prune_heads={FLAGS.prune_heads:g} prunes nothing"] if FLAGS["prune_heads"].present else []
    if FLAGS.keep_layers is not None:
        said.append(f"--keep_layers={FLAGS.keep_layers} keeps every layer of the {depth}-layer teacher")
    if FLAGS["target_sparsity"].present:
        said.append(f"--target_sparsity={FLAGS.target_sparsity:g} zeroes no weight")
    raise app.UsageError(f"{'; '.join(said) or 'nothing to prune'}: the run would train a full copy of the teacher; "
                         f"pass --prune_heads (a share of the heads in (0, 1)), --keep_layers (fewer than {depth}) "
                         "or --target_sparsity (a share of the weights in (0, 1))")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main, required=distill.REQUIRED_FLAGS)
