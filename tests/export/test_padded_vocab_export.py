"""Exports of models whose embedding table is padded past the vocab (config `vocab_size` 30528, `vocab.txt` 30522
tokens, as transformers accepts): the in-graph tokenizer's ids all fit, and a masked LM predicts only real pieces."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from model_dirs import pretraining_task_info, tiny_bert_config, write_model_dir

pytestmark = pytest.mark.slow

PADDED_VOCAB_SIZE = 30528  # bert-base-uncased's 30522 tokens, rounded up to a multiple of 64
TEXTS = ["the cat sat on the mat", "naïve café in Berlin"]


def test_an_encoder_with_a_padded_table_exports_and_answers_text(vocab_file, tmp_path):
    import dataclasses

    from export.saved_model import export
    from official_bert import BertEncoder
    from official_bert.checkpoints import save_encoder

    config = dataclasses.replace(tiny_bert_config(), vocab_size=PADDED_VOCAB_SIZE)
    directory = save_encoder(BertEncoder(config), str(tmp_path / "padded"), vocab_file=vocab_file)
    version = export(directory, str(tmp_path / "export"), max_seq_length=16)  # was: "30522 tokens, but ... 30528"
    model = tf.saved_model.load(version)
    out = model.signatures["serving_default"](text=tf.constant(TEXTS))
    assert out["sequence_output"].shape == (2, 16, 32) and not out["truncated"].numpy().any()
    served = model.signatures["embed"](text=tf.constant(TEXTS))["embedding"].numpy()
    np.testing.assert_allclose(np.linalg.norm(served, axis=-1), 1.0, atol=1e-5)


def test_a_masked_lm_with_a_padded_table_predicts_only_the_vocab_pieces(vocab_file, tmp_path):
    import dataclasses

    import keras

    from export.saved_model import export
    from official_bert import BertEncoder
    from official_bert.models.pretrainer import BertPretrainer

    keras.utils.set_random_seed(3)
    config = dataclasses.replace(tiny_bert_config(), vocab_size=PADDED_VOCAB_SIZE)
    model = BertPretrainer(BertEncoder(config))
    bias = np.zeros(PADDED_VOCAB_SIZE, np.float32)
    bias[30522:] = 100.0  # the padding rows would win every mask if they were candidates
    model.masked_lm.output_bias.assign(bias)
    model_dir = write_model_dir(tmp_path / "mlm", model, pretraining_task_info(config), vocab_file, 32)
    version = export(str(model_dir), str(tmp_path / "export"))  # was: "the model predicts 30528 pieces, but ..."
    out = tf.saved_model.load(version).signatures["serving_default"](
        text=tf.constant(["the [MASK] sat on the mat", "a [MASK] in [MASK]"]))
    ids, tokens = out["top_k_ids"].numpy(), out["top_k_tokens"].numpy()
    real = ids >= 0
    assert real.sum() == 3 * 5 and (ids[real] < 30522).all()
    assert all(token for token in tokens[real])
    np.testing.assert_array_less(0.0, out["top_k_probabilities"].numpy()[real])
