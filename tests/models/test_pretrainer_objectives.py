"""BertPretrainer's objectives: "mlm" (no sentence head, transformers' BertForMaskedLM loss) and "mlm_sop" (the
sentence head trained on sentence-order labels); a masked-LM-only run's model_dir and its weights."""

import json

import keras
import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder
from official_bert.checkpoints import load_encoder, load_pretrainer_weights
from official_bert.models.pretrainer import BertPretrainer
from official_bert.tasks.pretraining import PretrainingTask

from hf_pretraining import HF_CONFIG, batch, hf_outputs, save_hf_pretraining, torch, transformers


@pytest.fixture(scope="module")
def hf_pretraining_dir(tmp_path_factory):
    return save_hf_pretraining(tmp_path_factory.mktemp("hf_pretraining_objectives"))


def _pretrainer(objective):
    return BertPretrainer(BertEncoder(BertConfig(**HF_CONFIG)), objective=objective)


def test_mlm_has_no_sentence_head_and_gives_bert_for_masked_lm_loss(hf_pretraining_dir):
    pretrainer = _pretrainer("mlm")
    assert pretrainer.next_sentence is None
    assert "masked-LM head loaded" == PretrainingTask(objective="mlm").load_initial_weights(
        pretrainer, hf_pretraining_dir)
    inputs, labels = batch()
    outputs = pretrainer(inputs)
    assert set(outputs) == {"mlm_logits"}
    hf = transformers.BertForMaskedLM.from_pretrained(hf_pretraining_dir, attn_implementation="eager").eval()
    mlm_labels = np.full(inputs["input_word_ids"].shape, -100, np.int64)
    for i in range(mlm_labels.shape[0]):
        used = labels["masked_lm_weights"][i] > 0
        mlm_labels[i, inputs["masked_lm_positions"][i, used]] = labels["masked_lm_ids"][i, used]
    with torch.no_grad():
        hf_loss = float(hf(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                           attention_mask=torch.tensor(inputs["input_mask"]).long(),
                           token_type_ids=torch.tensor(inputs["input_type_ids"]).long(),
                           labels=torch.tensor(mlm_labels)).loss)
    mlm_only_labels = {k: v for k, v in labels.items() if k != "next_sentence_labels"}  # not needed
    assert float(pretrainer.compute_loss(y=mlm_only_labels, y_pred=outputs)) == pytest.approx(hf_loss, abs=1e-4)
    pretrainer.compile(optimizer="sgd")
    metrics = pretrainer.compute_metrics(inputs, labels, outputs)
    assert set(metrics) - {"loss"} == {"masked_lm_loss", "masked_lm_accuracy"}
    assert float(metrics["masked_lm_loss"]) == pytest.approx(hf_loss, abs=1e-4)


def test_sop_is_the_sentence_head_on_sentence_order_labels(hf_pretraining_dir):
    sop, nsp = _pretrainer("mlm_sop"), _pretrainer("mlm_nsp")
    assert load_pretrainer_weights(sop, hf_pretraining_dir) == {"masked_lm": True, "next_sentence": True}
    load_pretrainer_weights(nsp, hf_pretraining_dir)
    inputs, labels = batch()
    hf = transformers.BertForPreTraining.from_pretrained(hf_pretraining_dir, attn_implementation="eager").eval()
    _, _, hf_loss = hf_outputs(hf, inputs, labels)  # labels: 0 = in order, 1 = swapped for SOP
    outputs = sop(inputs)
    assert float(sop.compute_loss(y=labels, y_pred=outputs)) == pytest.approx(hf_loss, abs=1e-4)
    sop.compile(optimizer="sgd")
    assert set(sop.compute_metrics(inputs, labels, outputs)) - {"loss"} == {
        "masked_lm_loss", "masked_lm_accuracy", "sentence_order_loss", "sentence_order_accuracy"}
    np.testing.assert_allclose(outputs["nsp_logits"], nsp(inputs)["nsp_logits"], atol=1e-6)


def test_objective_survives_a_keras_round_trip_and_is_checked(tmp_path):
    pretrainer = _pretrainer("mlm")
    pretrainer.save(tmp_path / "mlm.keras")
    restored = keras.models.load_model(tmp_path / "mlm.keras")
    assert restored.objective == "mlm" and restored.next_sentence is None
    with pytest.raises(ValueError, match="objective='nsp'.*mlm_nsp, mlm, mlm_sop"):
        _pretrainer("nsp")


def _write_records(path, count=32, seq=16, predictions=4, seed=0):
    """Pre-training records (Google's features) of random tokens."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            ids = rng.integers(5, HF_CONFIG["vocab_size"], seq)
            positions = np.sort(rng.choice(np.arange(1, seq - 1), predictions, replace=False))
            features = {"input_ids": ints(ids), "input_mask": ints(np.ones(seq)), "segment_ids": ints(np.zeros(seq)),
                        "masked_lm_positions": ints(positions), "masked_lm_ids": ints(ids[positions]),
                        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * predictions)),
                        "next_sentence_labels": ints([rng.integers(0, 2)])}
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return path


@pytest.mark.slow
def test_masked_lm_only_run_records_its_objective_and_its_weights_load_everywhere(tmp_path):
    from official_bert import model_dir as model_dirs
    from official_bert.runner import RunConfig, run

    records = _write_records(tmp_path / "train.tfrecord")
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps({**HF_CONFIG, "max_position_embeddings": 16}))
    model_dir = tmp_path / "mlm_run"
    task = PretrainingTask(input_files=str(records), eval_files=str(records), bert_config_file=str(config_file),
                           max_predictions_per_seq=4, num_warmup_steps=1, log_steps=1, objective="mlm")
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]))
    run(task, RunConfig(model_dir=str(model_dir), vocab_file=str(vocab_file), max_seq_length=16, train_batch_size=8,
                        eval_batch_size=8, num_train_steps=3, checkpoint_steps=3, learning_rate=1e-3))
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["masked_lm_predictions"] == 32 * 4 and "next_sentence_loss" not in results
    assert model_dirs.read_task_info(model_dir)["objective"] == "mlm"
    loaded = model_dirs.load_model_dir(model_dir)
    assert loaded.model.objective == "mlm" and loaded.model.next_sentence is None
    hf = transformers.BertForMaskedLM.from_pretrained(model_dir / "pretrainer")
    assert hf.config.architectures == ["BertForMaskedLM"]
    # Fine-tuning tasks start from encoder/; continuing pre-training with NSP starts from pretrainer/.
    encoder, _ = load_encoder(model_dir / "encoder")
    inputs, _ = batch()
    encoder_inputs = {k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    np.testing.assert_allclose(encoder(encoder_inputs)["sequence_output"],
                               loaded.model.encoder(encoder_inputs)["sequence_output"], atol=1e-5)
    nsp = BertPretrainer(BertEncoder(loaded.config))
    assert load_pretrainer_weights(nsp, model_dirs.resolve_init_checkpoint(str(model_dir), model_dirs.PRETRAINER_DIR)
                                   ) == {"masked_lm": True, "next_sentence": False}
    np.testing.assert_allclose(nsp(inputs)["mlm_logits"], loaded.model(inputs)["mlm_logits"], atol=1e-5)
