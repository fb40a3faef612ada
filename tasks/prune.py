"""Prunes a fine-tuned classification model_dir: drops its least important layers (structured: smaller and
faster), and/or magnitude-prunes its kernels to a target sparsity, fine-tuning it (distilled from the unpruned
model) into a new model_dir.

    python -m tasks.prune --teacher=out/sst2 --keep_layers=4 --data_dir=../shared/data/glue/SST-2 \
        --model_dir=out/sst2_pruned
    python -m tasks.prune --teacher=out/sst2 --target_sparsity=0.5 --data_dir=../shared/data/glue/SST-2 \
        --model_dir=out/sst2_sparse

A layer's importance is how much the task loss on the first --importance_examples dev examples rises when that
layer is left out; the --keep_layers most important ones are kept, as `tasks.distill --student_layers` would
(the flags of `tasks.distill` apply: --alpha, --temperature, --num_train_steps, ...). `importance.json` in
--model_dir records the scores; with --target_sparsity, `sparsity.json` the share of zeros per kernel.
Magnitude pruning leaves the kernels' shapes as they are: the model is smaller only compressed (zeros compress),
and not faster on CPU (dense matmuls do not skip zeros).
"""

from absl import app, flags

from tasks import distill

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(distill)  # tasks.distill's flags (and the run flags) are this entry point's too
flags.DEFINE_integer("keep_layers", None, "Transformer layers kept (the most important on dev data); default: all.")
flags.DEFINE_float("target_sparsity", 0.0, "Share of the transformer kernels' weights set to zero by magnitude, "
                   "reached along a polynomial schedule during fine-tuning; 0: off.")
flags.DEFINE_integer("importance_examples", 256, "Dev examples the layer importance is measured on.")


def dev_batches(task, loaded, num_examples, batch_size=32):
    """`(inputs, labels)` batches of the first `num_examples` dev examples of a `ClassificationTask`."""
    from official_bert.data.classification_dataset import classification_dataset
    from official_bert.text.preprocessing import text_preprocessor

    split = task.read_split(task.glue_task.eval_splits[0])
    packer = text_preprocessor(loaded.vocab_file, loaded.lower_case, loaded.max_seq_length)
    text_b = split.text_b[:num_examples] if split.text_b is not None else None
    return classification_dataset(split.text_a[:num_examples], text_b, split.labels[:num_examples], packer,
                                  batch_size, is_training=False)


def main(argv):
    from official_bert import model_dir as model_dirs
    from official_bert.compression.pruning import layer_importance, layers_to_keep
    from official_bert.runner import run
    from official_bert.tasks.distillation import DistillationTask

    distill.check_command_line(argv)
    if FLAGS.student_layers or FLAGS.student_config:
        raise app.UsageError("tasks.prune chooses the layers itself: pass --keep_layers, not --student_layers / "
                             "--student_config")
    loaded = model_dirs.load_model_dir(FLAGS.teacher)
    if loaded.kind != model_dirs.CLASSIFICATION:
        raise app.UsageError(f"--teacher={FLAGS.teacher} is a {loaded.kind} model_dir; tasks.prune measures "
                             "importance on GLUE dev data (classification model_dirs)")
    task = distill.teacher_task(loaded.info)
    depth = loaded.config.num_hidden_layers
    layers = list(range(depth))
    if FLAGS.keep_layers is not None and FLAGS.keep_layers != depth:
        scores = layer_importance(loaded.model, lambda config: model_dirs.build_task_model(
            loaded.kind, config, loaded.info), dev_batches(task, loaded, FLAGS.importance_examples))
        layers = layers_to_keep(scores, FLAGS.keep_layers)
        print(f"layer importance (dev loss increase without the layer): {[round(s, 4) for s in scores]}; keeping "
              f"{layers}")
    run(DistillationTask(task, FLAGS.teacher, student_layers=layers, alpha=FLAGS.alpha, temperature=FLAGS.temperature,
                         hidden_weight=FLAGS.hidden_weight, target_sparsity=FLAGS.target_sparsity),
        distill.student_run_config(loaded.max_seq_length))
    if layers != list(range(depth)):
        model_dirs.write_json(f"{FLAGS.model_dir}/importance.json", {"loss_increase": scores, "kept": layers})


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
