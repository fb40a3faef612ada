"""Masked-LM export: top-k fillers for [MASK] in a fresh process equal BertPretrainer's in Python; ops; TFLite.

The reference splits each text on the literal "[MASK]" in Python, tokenizes the parts with `BertTokenizer`,
joins them with the [MASK] id, packs `[CLS] ... [SEP]` and runs `BertPretrainer` on the mask positions: the
export finds the marker in-graph instead.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from export.ops import ALLOWED_OPS, SAVER_OPS, TF_TEXT_OPS, disallowed_ops, saved_model_ops, signature_ops
from fresh_process import fresh_process_outputs
from lite_outputs import assert_lite_equals_saved
from model_dirs import pretraining_task_info, tiny_pretrainer, write_model_dir

pytestmark = pytest.mark.slow

SEQ_LENGTH = 48
TOP_K = 4  # not the default 5: the --top_k path is exercised
EDGE_TEXTS = ["", "No mask in this one.", "[MASK]", "[ MASK ] is text, [MASK]s and a[MASK]b are masks.",
              "Zürich [MASK] 東京 [MASK] café [MASK]", "[MASK], [MASK] " * 20]


def _masked_sentences(shared_data):
    """40 MRPC dev sentences with one to three words replaced by [MASK] (punctuation next to them stays)."""
    from official_bert.data.glue import read_glue_tsv

    examples = read_glue_tsv("MRPC", str(shared_data / "glue" / "MRPC" / "dev.tsv"), "dev")
    texts = []
    for i, sentence in enumerate(examples.text_a[:40]):
        words = sentence.split(" ")
        for j in range(1 + i % 3):
            k = (7 * i + 5 * j) % len(words)
            words[k] = "[MASK]" + ("," if words[k].endswith(",") else "")
        texts.append(" ".join(words))
    return texts


def _python_top_k(model, vocab_file, texts):
    """The reference: packed ids, mask positions, top-k ids and probabilities, truncation."""
    from official_bert.text import BertTokenizer

    tokenizer = BertTokenizer(vocab_file=vocab_file)
    special = tokenizer.get_special_tokens_dict()
    parts = [text.split("[MASK]") for text in texts]
    pieces = tokenizer(tf.constant([p for ps in parts for p in ps])).to_list()
    ids = np.full((len(texts), SEQ_LENGTH), special["padding_id"], np.int32)
    truncated, positions = [], []
    for row, text_parts in enumerate(parts):
        tokens = []
        for j in range(len(text_parts)):
            tokens += ([special["mask_id"]] if j else []) + pieces.pop(0)
        truncated.append(len(tokens) > SEQ_LENGTH - 2)
        tokens = [special["start_of_sequence_id"]] + tokens[:SEQ_LENGTH - 2] + [special["end_of_segment_id"]]
        ids[row, :len(tokens)] = tokens
        positions.append([p for p, t in enumerate(tokens) if t == special["mask_id"]])
    inputs = {"input_word_ids": ids, "input_mask": (ids != special["padding_id"]).astype(np.int32),
              "input_type_ids": np.zeros_like(ids)}
    width = max(len(p) for p in positions)
    padded = np.array([p + [0] * (width - len(p)) for p in positions], np.int32)
    logits = model({**inputs, "masked_lm_positions": padded}, training=False)["mlm_logits"].numpy().astype(np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    top = np.argsort(-logits, axis=-1, kind="stable")[..., :TOP_K]  # (batch, masks, k); ties: the lower id
    return {"inputs": inputs, "positions": positions, "truncated": np.array(truncated), "top_ids": top,
            "top_probabilities": np.take_along_axis(probabilities, top, axis=-1)}


@pytest.fixture(scope="module")
def masked_lm(shared_data, vocab_file, tmp_path_factory):
    """The model_dir, its export (top_k=4), the texts and the Python reference."""
    from export.saved_model import export

    model = tiny_pretrainer(seed=7)
    root = tmp_path_factory.mktemp("masked_lm")
    model_dir = write_model_dir(root / "pretraining", model, pretraining_task_info(model.encoder.config), vocab_file,
                                SEQ_LENGTH)
    texts = _masked_sentences(shared_data) + EDGE_TEXTS
    return {"model_dir": model_dir, "export": export(str(model_dir), str(root / "export"), top_k=TOP_K),
            "texts": texts, "reference": _python_top_k(model, vocab_file, texts)}


@pytest.fixture(scope="module")
def fresh_outputs(masked_lm, tmp_path_factory):
    texts = {"text": masked_lm["texts"]}
    tokens = {k: v.tolist() for k, v in masked_lm["reference"]["inputs"].items()}
    return fresh_process_outputs(tmp_path_factory.mktemp("fresh_mlm"), {"mlm": {
        "dir": masked_lm["export"], "examples": texts,
        "signatures": {"serving_default": texts, "serve_tokens": tokens}}})["mlm"]


def test_top_k_equals_the_python_pretrainer(masked_lm, fresh_outputs, vocab_file):
    reference, out = masked_lm["reference"], fresh_outputs
    vocab = open(vocab_file, encoding="utf-8").read().splitlines()
    counts = [len(p) for p in reference["positions"]]
    for signature in ("serving_default", "serve_examples", "serve_tokens"):
        assert out[f"{signature}/top_k_ids"].shape == (len(counts), max(counts), TOP_K), signature
        assert out[f"{signature}/num_masks"].tolist() == counts
        for row, count in enumerate(counts):
            np.testing.assert_array_equal(out[f"{signature}/mask_positions"][row, :count], reference["positions"][row])
            np.testing.assert_array_equal(out[f"{signature}/top_k_ids"][row, :count], reference["top_ids"][row, :count])
            np.testing.assert_allclose(out[f"{signature}/top_k_probabilities"][row, :count],
                                       reference["top_probabilities"][row, :count], atol=1e-6, rtol=0)
            tokens = [[t.decode("utf-8") for t in ts] for ts in out[f"{signature}/top_k_tokens"][row, :count]]
            assert tokens == [[vocab[i] for i in ids] for ids in reference["top_ids"][row, :count]]
            # padding
            assert (out[f"{signature}/mask_positions"][row, count:] == -1).all()
            assert (out[f"{signature}/top_k_ids"][row, count:] == -1).all()
            assert (out[f"{signature}/top_k_tokens"][row, count:] == b"").all()
            assert (out[f"{signature}/top_k_probabilities"][row, count:] == 0).all()
    np.testing.assert_array_equal(out["serving_default/truncated"], reference["truncated"])
    np.testing.assert_array_equal(out["serve_examples/truncated"], reference["truncated"])
    assert reference["truncated"][-1] and counts[-1] < 40  # masks past the sequence length are not reported
    edge = dict(zip(EDGE_TEXTS, counts[-len(EDGE_TEXTS):]))
    assert edge["[ MASK ] is text, [MASK]s and a[MASK]b are masks."] == 2 and edge["No mask in this one."] == 0
    assert len({tuple(ids) for ids in out["serving_default/top_k_ids"][:40, 0]}) > 10  # varied answers


def test_lower_case_marker_is_a_mask_for_uncased_models(masked_lm):
    from export.saved_model import build_module

    module = build_module(str(masked_lm["model_dir"]), str(masked_lm["model_dir"]))
    assert module.top_k == 5  # the default
    out = module.serving_default(tf.constant(["The cat [MASK] on the mat.", "The cat [mask] on the mat.",
                                              "The cat [Mask] on the mat."]))
    ids = out["top_k_ids"].numpy()
    assert ids.shape == (3, 1, 5) and (ids == ids[0]).all()
    assert out["mask_positions"].numpy()[:, 0].tolist() == [3, 3, 3]


def test_the_export_traces_the_encoder_once_for_every_signature(masked_lm):
    """`serving_default` (at the request's longest text), `serve_tokens` and the TFLite function (at seq_length)
    call one trace of the encoder (`export.traced_once`), not a trace each."""
    from export.saved_model import build_module

    module = build_module(str(masked_lm["model_dir"]), str(masked_lm["model_dir"]))
    encoder, traced_shapes = module.model.encoder, []

    def counted(inputs, **kwargs):
        traced_shapes.append(inputs["input_word_ids"].shape.as_list())
        return encoder(inputs, **kwargs)

    module.model.encoder = counted
    try:
        module.saved_object()
    finally:
        module.model.encoder = encoder
    assert traced_shapes == [[None, None]]


def test_every_signature_uses_only_serving_safe_ops(masked_lm):
    ops = signature_ops(masked_lm["export"])
    assert set(ops) == {"serving_default", "serve_examples", "serve_tokens"}
    for name, signature_op_set in ops.items():
        assert disallowed_ops(signature_op_set) == set(), name
        assert ("FastBertNormalize" in signature_op_set) == (name != "serve_tokens"), name
    assert disallowed_ops(saved_model_ops(masked_lm["export"]), ALLOWED_OPS | SAVER_OPS) == set()


@pytest.fixture(scope="module")
def saved(masked_lm):
    """The export loaded with `tf.saved_model.load` (the tests only call its signatures)."""
    return tf.saved_model.load(masked_lm["export"])


@pytest.mark.parametrize("signature", ["serving_default", "serve_tokens"])
def test_tflite_float_model_equals_the_saved_model(masked_lm, saved, signature):
    from export import tflite

    pytest.importorskip("ai_edge_litert.interpreter")
    texts = masked_lm["texts"][:4] + EDGE_TEXTS
    if signature == "serving_default":
        inputs = {"text": np.array(texts, object)}
    else:
        inputs = {k: v[-len(EDGE_TEXTS) - 4:] for k, v in masked_lm["reference"]["inputs"].items()}
    model = tflite.convert(masked_lm["export"], signature, "none")
    assert tflite.custom_ops(model) == (TF_TEXT_OPS if signature == "serving_default" else set())
    lite = tflite.interpreter(model).get_signature_runner(signature)(**inputs)
    out = saved.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})
    assert set(lite) == set(out)  # strings included
    assert_lite_equals_saved(lite, out)
    assert lite["num_masks"].sum() > 0


def test_predict_prints_the_top_k_lists(masked_lm, fresh_outputs):
    from export.predict import predict

    answer = predict(masked_lm["export"], [masked_lm["texts"][1].encode()])
    assert set(answer) == {"top_k_tokens", "top_k_ids", "top_k_probabilities", "mask_positions", "num_masks",
                           "truncated"}
    count = answer["num_masks"]
    assert count == 2 and answer["top_k_ids"] == fresh_outputs["serving_default/top_k_ids"][1, :count].tolist()
    assert len(answer["top_k_tokens"]) == count and len(answer["top_k_tokens"][0]) == TOP_K
