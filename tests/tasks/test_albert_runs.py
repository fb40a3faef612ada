"""ALBERT end to end, in-process: MRPC fine-tune from a tiny transformers ALBERT with a SentencePiece model trained
here, the model_dir (spiece.model; encoder/ that transformers loads, tokenizer included), the raw-text export in TF
Serving's loader and in LiteRT, the encoder export and feature extraction equal to AlbertModel, and a task's refusal
of a tokenizer it does not take. Both exports go through TF Serving's loader in one fresh process.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from export.ops import ALLOWED_OPS, SAVER_OPS, disallowed_ops, saved_model_ops
from fill_mask_checks import assert_fill_mask_as_transformers
from hf_references import albert_checkpoint
from official_bert.runner import RunConfig, run
from official_bert.tasks.classification import ClassificationTask
from official_bert.text import load_preprocessor
from tests.export.session_loader import tool_checks

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

SEQ = 32
TEXTS = ["A tiny test .", "Another one", "Zürich, 東京 and the café " * 6]
TEXTS_B = ["It is tiny .", "", "short"]


def _mrpc_sentences(shared_data, split="train", limit=2000):
    rows = (shared_data / "glue" / "MRPC" / f"{split}.tsv").read_text(encoding="utf-8-sig").splitlines()[1:limit]
    return [row.split("\t")[3:5] for row in rows]


@pytest.fixture(scope="module")
def checkpoint(shared_data, tmp_path_factory):
    """A tiny random `AlbertModel` (E 16 -> H 32, 2 layers sharing one block) with a 400-piece spiece.model."""
    sentences = [text for pair in _mrpc_sentences(shared_data) for text in pair]
    return albert_checkpoint(sentences, tmp_path_factory.mktemp("albert") / "checkpoint", SEQ)


@pytest.fixture(scope="module")
def trained(checkpoint, shared_data, tmp_path_factory):
    """(model_dir after 2 MRPC training steps, evaluation results)."""
    model_dir = tmp_path_factory.mktemp("albert_mrpc") / "mrpc"
    config = RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                       train_batch_size=8, eval_batch_size=128, num_train_steps=2, checkpoint_steps=100)
    results = run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
    return model_dir, results


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    from export.saved_model import export

    model_dir, _ = trained
    return export(str(model_dir), str(tmp_path_factory.mktemp("albert_export") / "mrpc"))


@pytest.fixture(scope="module")
def saved(exported):
    """The classifier export loaded with `tf.saved_model.load` (the tests only call its signatures)."""
    return tf.saved_model.load(exported)


@pytest.fixture(scope="module")
def mlm_sop(checkpoint, shared_data, tmp_path_factory):
    """`run_pretraining --objective=mlm_sop` from the ALBERT checkpoint, 2 steps, and its fill-mask export:
    (model_dir, evaluation results, version directory)."""
    from export.saved_model import export
    from official_bert.tasks.pretraining import PretrainingTask

    root = tmp_path_factory.mktemp("albert_mlm_sop")
    records = _sentence_order_records(shared_data, checkpoint, root / "train.tfrecord")
    model_dir = root / "mlm_sop"
    task = PretrainingTask(input_files=str(records), eval_files=str(records), max_predictions_per_seq=4,
                           num_warmup_steps=1, objective="mlm_sop")
    results = run(task, RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                                  train_batch_size=8, eval_batch_size=8, num_train_steps=2, checkpoint_steps=100))
    return model_dir, results, export(str(model_dir), str(root / "export"), top_k=3)


@pytest.fixture(scope="module")
def session_checks(exported, mlm_sop):
    """`session_loader_check.py` on the classifier and the fill-mask export, in one fresh process:
    version directory -> (exit code, what it printed)."""
    return tool_checks([exported, mlm_sop[2]])[0]


def _assert_session_check_passed(session_checks, version):
    code, printed = session_checks[str(version)]
    assert code == 0 and "FAILED" not in printed, printed[-2000:]


def test_fine_tune_writes_an_albert_model_dir_that_transformers_loads(trained, shared_data):
    model_dir, results = trained
    assert results["num_examples"] == 408 and 0.0 <= results["accuracy"] <= 1.0
    assert json.loads((model_dir / "bert_config.json").read_text())["model_type"] == "albert"
    assert (model_dir / "spiece.model").is_file() and (model_dir / "encoder" / "spiece.model").is_file()
    encoder = transformers.AutoModel.from_pretrained(str(model_dir / "encoder"))
    assert encoder.config.model_type == "albert" and encoder.config.embedding_size == 16
    reference = transformers.AutoTokenizer.from_pretrained(str(model_dir / "encoder"))
    assert type(reference).__name__.startswith("AlbertTokenizer")
    pairs = _mrpc_sentences(shared_data, "dev", 41)
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    inputs = load_preprocessor(model_dir, SEQ)([tf.constant(first), tf.constant(second)])
    expected = reference(first, second, truncation="longest_first", max_length=SEQ, padding="max_length",
                         return_token_type_ids=True)
    np.testing.assert_array_equal(inputs["input_word_ids"].numpy(), expected["input_ids"])
    np.testing.assert_array_equal(inputs["input_type_ids"].numpy(), expected["token_type_ids"])


def test_raw_text_export_answers_as_the_model_in_tf_serving_loader(trained, exported, saved, session_checks):
    from official_bert import model_dir as model_dirs

    model_dir, _ = trained
    served = saved.signatures["serving_default"]
    out = served(text=tf.constant(TEXTS), text_b=tf.constant(TEXTS_B))
    loaded = model_dirs.load_model_dir(str(model_dir))
    packed = load_preprocessor(model_dir, SEQ)([tf.constant(TEXTS), tf.constant(TEXTS_B)])
    np.testing.assert_allclose(out["logits"].numpy(), loaded.model(packed).numpy(), atol=1e-5, rtol=0)
    assert out["truncated"].numpy().tolist() == [False, False, True]
    assert sorted(os.listdir(os.path.join(exported, "assets"))) == ["labels.txt", "spiece.model"]
    assert disallowed_ops(saved_model_ops(exported), ALLOWED_OPS | SAVER_OPS) == set()
    _assert_session_check_passed(session_checks, exported)


def test_tflite_of_the_albert_classifier_runs_in_litert_from_raw_text(exported, saved):
    pytest.importorskip("ai_edge_litert.interpreter")
    from export import tflite

    model = tflite.convert(exported)
    assert tflite.custom_ops(model) == {"TFText>FastSentencepieceTokenize"}
    lite = tflite.interpreter(model).get_signature_runner("serving_default")(
        text=np.array(TEXTS, object), text_b=np.array(TEXTS_B, object))
    out = saved.signatures["serving_default"](text=tf.constant(TEXTS), text_b=tf.constant(TEXTS_B))
    np.testing.assert_allclose(lite["logits"], out["logits"].numpy(), atol=1e-5, rtol=0)
    assert lite["label_id"].tolist() == out["label_id"].numpy().tolist()
    assert lite["truncated"].tolist() == out["truncated"].numpy().tolist()


def test_encoder_export_and_feature_extraction_equal_albert_model(checkpoint, tmp_path):
    from export.saved_model import build_module
    from official_bert.pipelines.feature_extractor import FeatureExtractor
    from official_bert.pipelines.loading import load_encoder_and_tokenizer

    reference = transformers.AlbertModel.from_pretrained(str(checkpoint)).eval()
    tokenizer = transformers.AlbertTokenizerFast.from_pretrained(str(checkpoint))
    encoded = tokenizer(TEXTS[:2], padding="max_length", max_length=SEQ, return_tensors="pt")
    with torch.no_grad():
        expected = reference(**encoded, output_hidden_states=True)
    module = build_module(str(checkpoint), str(tmp_path), max_seq_length=SEQ)
    out = module.serving_default(tf.constant(TEXTS[:2]))
    np.testing.assert_allclose(out["pooled_output"].numpy(), expected.pooler_output.numpy(), atol=1e-5, rtol=0)

    encoder, sentencepiece = load_encoder_and_tokenizer(str(checkpoint))
    extractor = FeatureExtractor(encoder, sentencepiece, layers=[-1, 0], seq_length=SEQ, pooling="cls")
    features = extractor.extract(TEXTS[:2])
    hidden = expected.hidden_states
    cls = np.stack([hidden[-1][:, 0].numpy(), hidden[0][:, 0].numpy()], axis=1)  # (batch, layers, hidden)
    np.testing.assert_allclose(np.stack([f.values for f in features]), cls, atol=1e-5, rtol=0)
    assert [f.tokens for f in features] == [["[CLS]"], ["[CLS]"]]
    with pytest.raises(ValueError, match="first_subtoken.*SentencePiece"):
        FeatureExtractor(encoder, sentencepiece, layers=[-1], seq_length=SEQ, pooling="first_subtoken")


def test_a_task_for_other_tokenizers_refuses_albert_before_writing(checkpoint, shared_data, tmp_path):
    class WordPieceOnly(ClassificationTask):
        tokenizer_kinds = ("wordpiece",)

    config = RunConfig(model_dir=str(tmp_path / "mrpc"), init_checkpoint=str(checkpoint), max_seq_length=SEQ)
    with pytest.raises(ValueError, match="classification: a albert model's sentencepiece tokenizer is not supported"):
        run(WordPieceOnly("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
    assert not (tmp_path / "mrpc").exists()


def _sentence_order_records(shared_data, checkpoint, path, count=16):
    """Pre-training TFRecords (Google's features) of MRPC pairs as AlbertTokenizerFast packs them, 4 pieces masked,
    every other pair swapped (sentence-order label 1)."""
    tokenizer = transformers.AlbertTokenizerFast.from_pretrained(str(checkpoint))
    rng = np.random.default_rng(0)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for index, (first, second) in enumerate(_mrpc_sentences(shared_data, limit=count + 1)):
            swapped = index % 2
            encoded = tokenizer(*((second, first) if swapped else (first, second)), truncation="longest_first",
                                max_length=SEQ, return_token_type_ids=True)
            ids, types = encoded["input_ids"], encoded["token_type_ids"]
            candidates = [i for i, piece in enumerate(ids) if piece not in tokenizer.all_special_ids]
            positions = np.sort(rng.choice(candidates, 4, replace=False))
            masked = np.array(ids)
            masked[positions] = tokenizer.mask_token_id
            pad = SEQ - len(ids)
            features = {"input_ids": ints(list(masked) + [tokenizer.pad_token_id] * pad),
                        "input_mask": ints([1] * len(ids) + [0] * pad), "segment_ids": ints(types + [0] * pad),
                        "masked_lm_positions": ints(positions), "masked_lm_ids": ints(np.array(ids)[positions]),
                        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 4)),
                        "next_sentence_labels": ints([swapped])}
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return path


def test_mlm_sop_run_and_fill_mask_export_find_masks_as_transformers(mlm_sop, session_checks):
    """`run_pretraining --objective=mlm_sop` from the ALBERT checkpoint; its pretrainer/ loads as AlbertForPreTraining;
    the fill-mask export finds `[MASK]` as AlbertTokenizerFast (ids equal), answers from the model's own head, and
    runs in TF Serving's loader; its TFLite conversion names the string ops LiteRT lacks."""
    from export import tflite
    from official_bert import model_dir as model_dirs

    model_dir, results, version = mlm_sop
    assert 0.0 <= results["sentence_order_accuracy"] <= 1.0
    heads = transformers.AlbertForPreTraining.from_pretrained(str(model_dir / "pretrainer"))
    assert heads.config.model_type == "albert"

    texts = ["The capital of France is [MASK].", "[MASK] likes [MASK] , and[MASK]", "no mask here", "[MASK]"]
    reference = transformers.AlbertTokenizerFast.from_pretrained(str(model_dir / "encoder"))
    assert_fill_mask_as_transformers(version, model_dirs.load_model_dir(str(model_dir)), reference, texts, SEQ, 3)
    _assert_session_check_passed(session_checks, version)
    with pytest.raises(ValueError, match="needs ops TFLite lacks.*StringSplitV2"):
        tflite.convert(version)


def test_mlm_sop_from_text_files_masks_whole_sentencepiece_words(checkpoint, shared_data, tmp_path):
    """`run_pretraining --text_files` with ALBERT: its SentencePiece in the input pipeline, sentence-order pairs and
    whole-word masks (ALBERT's start-piece rule) drawn on the fly."""
    from official_bert.data.dynamic_masking import dynamic_masking_dataset
    from official_bert.data.pretraining_vocab import MaskingVocab
    from official_bert.tasks.pretraining import PretrainingTask
    from official_bert.text.sentencepiece_tokenizer import load_sentencepiece_tokenizer

    lines = []
    for index, (first, second) in enumerate(_mrpc_sentences(shared_data, limit=121)):
        lines += [first, second] + ([""] if index % 4 == 3 else [])  # documents of 8 sentences
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(lines), encoding="utf-8")
    tokenizer = load_sentencepiece_tokenizer(str(checkpoint))
    vocab = MaskingVocab.from_tokenizer(tokenizer)
    batch = next(iter(dynamic_masking_dataset([str(text)], tokenizer, 8, SEQ, 5, do_whole_word_mask=True,
                                              sentence_order=True)))
    positions, weights = batch["masked_lm_positions"].numpy(), batch["masked_lm_weights"].numpy()
    originals, continuations = batch["input_word_ids"].numpy().copy(), 0
    for row in range(len(originals)):
        chosen = set(positions[row][weights[row] > 0].tolist())
        originals[row, sorted(chosen)] = batch["masked_lm_ids"].numpy()[row][weights[row] > 0]
        for p in chosen:  # a continuation piece is masked only with the piece before it
            if originals[row, p] in vocab.suffix_ids and originals[row, p - 1] not in (vocab.cls_id, vocab.sep_id):
                assert p - 1 in chosen, (row, p)
                continuations += 1
    assert continuations > 0  # whole words of several pieces were masked
    model_dir = tmp_path / "sop_text"
    task = PretrainingTask(text_files=str(text), max_predictions_per_seq=5, num_warmup_steps=1, objective="mlm_sop",
                           do_whole_word_mask=True)
    run(task, RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                        train_batch_size=8, num_train_steps=2, checkpoint_steps=100, do_eval=False))
    assert (model_dir / "pretrainer" / "spiece.model").is_file()
