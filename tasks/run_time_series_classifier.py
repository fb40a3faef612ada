"""Trains and evaluates a BERT over sequences of feature vectors (Kalfaoglu et al. 2020's late temporal model): a
class per sequence of clip features, sensor windows, or any per-time-step vectors.

    python -m tasks.run_time_series_classifier --train_file=train.npz --eval_file=test.npz --model_dir=out/motions
    python -m tasks.run_time_series_classifier --model_dir=out/motions --do_train=false --do_eval=false \
        --do_predict --test_file=new.npz --output_dir=out/motions_new

Files are `.npz` with `features` float (N, time, channels), zero-padded, optional `lengths` (N), `labels` (N, int or
strings) and `label_names` (`official_bert.data.time_series`). The model (`BertTimeSeriesClassifier`) is trained
from scratch; its defaults are the paper's head: one pre-LN block with 8 heads, feed-forward 4x hidden, GELU,
dropout 0.1, time steps kept as attention keys with probability 0.8 in training, dropout 0.8 before the dense
head; the features are standardised per channel with the training split's statistics (saved with the model).

Writes to --model_dir: `bert_config.json` (the blocks' shape), `task.json` (labels, channels, head options,
standardisation), `run.json`, `checkpoints/` (resumed automatically), `logs/`, `model.weights.h5`,
`train_results.json`, `eval_results.json` (accuracy, macro and weighted F1, confusion matrix) and with --do_predict
`predictions/predictions.tsv` (each sequence's label and class probabilities). Export it with
`python -m export.saved_model --model_dir=...`.
"""

import dataclasses

from absl import flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "Training sequences (.npz: features, lengths, labels, label_names).")
flags.DEFINE_string("eval_file", None, "Evaluation sequences (.npz, labeled).")
flags.DEFINE_string("test_file", None, "With --do_predict: sequences to predict (.npz, labels optional); default: "
                    "--eval_file.")
flags.DEFINE_boolean("standardize", True, "Standardise each channel with the training split's mean and deviation "
                     "(saved with the model; the export applies it).")
flags.DEFINE_integer("hidden_size", 64, "Encoder width; the features are projected to it (no projection when equal).")
flags.DEFINE_integer("num_layers", 1, "Transformer blocks.")
flags.DEFINE_integer("num_heads", 8, "Attention heads.")
flags.DEFINE_integer("intermediate_size", None, "Feed-forward width; default 4 * --hidden_size.")
flags.DEFINE_boolean("norm_first", True, "Pre-LayerNorm blocks (the paper's); --nonorm_first: BERT's post-LN.")
flags.DEFINE_float("key_keep_prob", 0.8, "In training, the probability that a time step stays an attention key (the "
                   "classification position always does).")
flags.DEFINE_float("hidden_dropout", 0.1, "Dropout on the embeddings, residual branches and attention.")
flags.DEFINE_float("classifier_dropout", 0.8, "Dropout before the dense head.")
flags.DEFINE_enum("init_scheme", "fan_in", ["fan_in", "bert"], "How the dense weights are drawn: fan_in: "
                  "PyTorch's defaults (uniform in +-1/sqrt(fan_in)), which train this small encoder from scratch "
                  "better; bert: truncated normal with stddev 0.02, BERT's.")
flags.DEFINE_integer("steps_per_loop", 10, "Training steps per call into TensorFlow (Keras' steps_per_execution): a "
                     "small model's step is mostly per-call overhead. The weights are the same for any value; "
                     "checkpoints, progress lines and Ctrl-C land between calls.")
flags.DEFINE_integer("max_time", None, "The longest sequence the model takes; default: the training file's time "
                     "axis.")
common.define_run_flags(skip=("init_checkpoint", "vocab_file", "do_lower_case", "max_seq_length",
                              "train_on_real_tokens"),
                        train_batch_size=16, learning_rate=1e-3, num_train_epochs=100.0, checkpoint_steps=100,
                        helps={"train_batch_size": "Global training batch size, in sequences."})


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.time_series import TimeSeriesClassificationTask

    check_command_line(argv)
    task = TimeSeriesClassificationTask(
        FLAGS.train_file, FLAGS.eval_file, FLAGS.test_file, FLAGS.standardize, FLAGS.hidden_size, FLAGS.num_layers,
        FLAGS.num_heads, FLAGS.intermediate_size, FLAGS.norm_first, FLAGS.key_keep_prob, FLAGS.hidden_dropout,
        FLAGS.classifier_dropout, FLAGS.max_time, FLAGS.init_scheme, FLAGS.steps_per_loop)
    config = common.run_config()
    run(task, dataclasses.replace(config, max_seq_length=task.sequence_length(config)))


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
