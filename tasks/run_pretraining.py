"""Pre-trains BERT with the masked-LM and next-sentence objectives (or continues a checkpoint).

--objective picks the objective: mlm_nsp (BERT, the default), mlm (RoBERTa: masked LM only, no next-sentence
head or loss; with --text_files, dynamic masking) or mlm_sop (ALBERT: masked LM + sentence-order prediction,
on TFRecords of `create_pretraining_data --sentence_order=true`, or on --text_files, whose pairs are then
built with sentence-order labels). task.json records it.

    # TFRecords of tasks.create_pretraining_data (or Google's), a model from scratch:
    python -m tasks.run_pretraining --input_files='out/data/*.tfrecord' --preset=uncased_L-4_H-256_A-4 \
        --vocab_file=../shared/data/bert-vocab/bert-base-uncased-vocab.txt --model_dir=out/pretrain \
        --train_batch_size=256 --max_seq_length=128 --max_predictions_per_seq=20 \
        --num_train_steps=100000 --num_warmup_steps=10000 --learning_rate=1e-4 --optimizer=lamb
    # raw text with dynamic masking (fresh masks every epoch), continuing a checkpoint:
    python -m tasks.run_pretraining --text_files='corpus/*.txt' --init_checkpoint=../shared/data/all-MiniLM-L6-v2 \
        --model_dir=out/continue --num_train_steps=1000 --num_warmup_steps=100

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (sequence length, predictions per sequence,
casing), `checkpoints/` (resumed automatically), `logs/` (TensorBoard), `train_results.json`,
`model.weights.h5` (the whole pre-trainer, Keras), `pretrainer/` (a Hugging Face `BertForPreTraining`
directory, heads included), `encoder/` (a Hugging Face `BertModel` directory, for fine-tuning) and with
--do_eval `eval_results.json` (masked-LM and next-sentence loss and accuracy on --eval_files).
"""

from absl import flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("input_files", None, "Comma-separated globs of pre-training TFRecord files "
                    "(tasks.create_pretraining_data or Google's create_pretraining_data.py).")
flags.DEFINE_string("text_files", None, "Comma-separated globs of raw text files (one sentence per line, a blank "
                    "line between documents), masked on the fly (dynamic masking) instead of --input_files.")
flags.DEFINE_string("eval_files", None, "With --do_eval: globs of held-out files in the format of the training "
                    "input: text when --text_files is given (with --do_train=false too), else TFRecords.")
flags.DEFINE_string("bert_config_file", None, "bert_config.json / config.json of the model (default: the one of "
                    "--init_checkpoint).")
flags.DEFINE_string("preset", None, "A named config from configs/ (e.g. bert_base_uncased, uncased_L-4_H-256_A-4) "
                    "instead of --bert_config_file.")
flags.DEFINE_enum("objective", "mlm_nsp", ["mlm_nsp", "mlm", "mlm_sop"], "mlm_nsp: masked LM + next-sentence "
                  "prediction (BERT); mlm: masked LM only (RoBERTa); mlm_sop: masked LM + sentence-order prediction "
                  "(ALBERT; TFRecords made with create_pretraining_data --sentence_order=true).")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence (padded).")
flags.DEFINE_float("masked_lm_prob", 0.15, "--text_files: fraction of word pieces masked.")
flags.DEFINE_boolean("do_whole_word_mask", False, "--text_files: mask all pieces of a word together.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Linear warmup steps, then linear decay to 0.")
flags.DEFINE_integer("steps_per_loop", 1, "Steps per host call (Keras steps_per_execution); raise on TPUs. "
                     "--num_train_steps, --checkpoint_steps and --log_steps must be multiples of it.")
flags.DEFINE_integer("log_steps", 100, "Steps between log lines; the logged metrics average these steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches at most.")
common.define_run_flags(
    skip=("num_train_epochs", "warmup_proportion", "do_predict", "train_on_real_tokens"), learning_rate=1e-4,
    eval_batch_size=32,
    num_train_steps=100000, checkpoint_steps=1000, do_eval=False,
    helps={"init_checkpoint": "Optional: a Hugging Face or Google BERT checkpoint, a model_dir of ours or a hub id, to "
                              "continue; heads it lacks start fresh. Unset: train from scratch.",
           "vocab_file": "WordPiece vocab; default: found beside --init_checkpoint. Required for --text_files.",
           "do_eval": "Evaluate on --eval_files."})



def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.pretraining import PretrainingTask

    check_command_line(argv)
    task = PretrainingTask(FLAGS.input_files, FLAGS.text_files, FLAGS.eval_files, FLAGS.bert_config_file, FLAGS.preset,
                           FLAGS.max_predictions_per_seq, FLAGS.masked_lm_prob, FLAGS.do_whole_word_mask,
                           FLAGS.num_warmup_steps, FLAGS.steps_per_loop, FLAGS.log_steps, FLAGS.max_eval_steps,
                           FLAGS.objective)
    run(task, common.run_config())


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
