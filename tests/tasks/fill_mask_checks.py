"""The check both families' masked-LM exports pass: the export finds the mask markers where transformers' tokenizer
puts its mask ids, and answers each mask with the top-k ids of the model's own masked-LM head."""

import numpy as np
import tensorflow as tf


def assert_fill_mask_as_transformers(version_dir, loaded, reference, texts, seq_length, top_k):
    """Args:
        version_dir: the export (`export.saved_model.export` of a pre-training model_dir).
        loaded: that model_dir, `official_bert.model_dir.load_model_dir`.
        reference: transformers' tokenizer of the model (`RobertaTokenizerFast`, `AlbertTokenizerFast`).
        texts: texts with mask markers (some with none).
        seq_length: the export's sequence length.
        top_k: the export's candidates per mask.
    """
    out = tf.saved_model.load(version_dir).signatures["serving_default"](text=tf.constant(texts))
    for row, sentence in enumerate(texts):
        ids = reference(sentence, truncation=True, max_length=seq_length)["input_ids"]
        positions = [i for i, piece in enumerate(ids) if piece == reference.mask_token_id]
        assert int(out["num_masks"][row]) == len(positions), sentence
        assert list(out["mask_positions"].numpy()[row, :len(positions)]) == positions, sentence
        if not positions:
            continue
        inputs = {"input_word_ids": tf.constant([ids]), "input_mask": tf.ones([1, len(ids)], tf.int32),
                  "input_type_ids": tf.zeros([1, len(ids)], tf.int32)}
        sequence = loaded.model.encoder(inputs, training=False)["sequence_output"]
        logits = loaded.model.masked_lm(sequence, tf.constant([positions]))  # (1, masks, vocab)
        expected = np.argsort(-logits.numpy()[0], axis=-1, kind="stable")[:, :top_k]
        np.testing.assert_array_equal(out["top_k_ids"].numpy()[row, :len(positions)], expected, err_msg=sentence)
