"""RoBERTa and DistilBERT end to end, in-process: MRPC fine-tune from a tiny transformers checkpoint, the model_dir
(encoder/ that transformers loads, the family's tokenizer files), the raw-text export, TFLite's refusal of the BPE.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from export.saved_model import build_module
from fill_mask_checks import assert_fill_mask_as_transformers
from hf_references import roberta_checkpoint
from official_bert.runner import RunConfig, run
from official_bert.tasks.classification import ClassificationTask
from official_bert.text import load_preprocessor
from tests.tasks.forked_commands import run_forked, run_python

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SEQ = 32


def _roberta_checkpoint(shared_data, directory):
    return roberta_checkpoint(shared_data, directory, SEQ)


def _distilbert_checkpoint(shared_data, directory):
    """A tiny random `DistilBertModel` with BERT's uncased WordPiece vocab."""
    vocab = (shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt").read_text(encoding="utf-8")
    config = transformers.DistilBertConfig(vocab_size=len(vocab.splitlines()), dim=32, n_layers=2, n_heads=4,
                                           hidden_dim=37, max_position_embeddings=SEQ)
    torch.manual_seed(0)
    transformers.DistilBertModel(config).save_pretrained(directory)
    (directory / "vocab.txt").write_text(vocab, encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    return directory


@pytest.fixture(scope="module", params=["roberta", "distilbert"])
def trained(request, shared_data, tmp_path_factory):
    """(family, init checkpoint, model_dir after 2 training steps, evaluation results)."""
    root = tmp_path_factory.mktemp(request.param)
    make = _roberta_checkpoint if request.param == "roberta" else _distilbert_checkpoint
    checkpoint = make(shared_data, root / "checkpoint")
    model_dir = root / "mrpc"
    config = RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                       train_batch_size=8, eval_batch_size=128, num_train_steps=2, checkpoint_steps=100)
    results = run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
    return request.param, checkpoint, model_dir, results


def test_fine_tune_writes_a_model_dir_of_the_family(trained):
    family, _, model_dir, results = trained
    assert results["num_examples"] == 408 and 0.0 <= results["accuracy"] <= 1.0
    assert json.loads((model_dir / "bert_config.json").read_text())["model_type"] == family
    files = ("vocab.json", "merges.txt") if family == "roberta" else ("vocab.txt",)
    for name in files:
        assert (model_dir / name).is_file() and (model_dir / "encoder" / name).is_file(), name
    encoder = transformers.AutoModel.from_pretrained(str(model_dir / "encoder"))
    assert encoder.config.model_type == family


def test_preprocessor_of_the_model_dir_packs_as_transformers(trained, shared_data):
    family, checkpoint, model_dir, _ = trained
    pairs = [row.split("\t")[3:5] for row in (shared_data / "glue" / "MRPC" / "dev.tsv").read_text(
        encoding="utf-8-sig").splitlines()[1:21]]
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    inputs = load_preprocessor(model_dir, SEQ)([tf.constant(first), tf.constant(second)])
    tokenizer_class = transformers.RobertaTokenizerFast if family == "roberta" else transformers.BertTokenizerFast
    reference = tokenizer_class.from_pretrained(str(model_dir / "encoder"))
    expected = reference(first, second, truncation="longest_first", max_length=SEQ, padding="max_length")
    np.testing.assert_array_equal(inputs["input_word_ids"].numpy(), expected["input_ids"])
    np.testing.assert_array_equal(inputs["input_mask"].numpy(), expected["attention_mask"])


def test_raw_text_export_answers_as_the_model_and_tflite_refuses_the_bpe(trained, tmp_path):
    from export import tflite
    from official_bert import model_dir as model_dirs

    family, _, model_dir, _ = trained
    module = build_module(str(model_dir), str(tmp_path))
    texts, texts_b = ["A tiny test .", "Another one"], ["It is tiny .", ""]
    out = module.serving_default(tf.constant(texts), tf.constant(texts_b))
    loaded = model_dirs.load_model_dir(str(model_dir))
    packed = load_preprocessor(model_dir, SEQ)([tf.constant(texts), tf.constant(texts_b)])
    np.testing.assert_allclose(out["logits"].numpy(), loaded.model(packed).numpy(), atol=1e-5, rtol=0)
    if family == "roberta":  # the export ships vocab.json + merges.txt, by which the TFLite conversion knows it
        assert sorted(module.assets) == ["labels.txt", "merges.txt", "vocab.json"]
        version = tmp_path / "export" / "1"
        (version / "assets").mkdir(parents=True)
        (version / "assets" / "merges.txt").write_text("")
        (version / "saved_model.pb").write_bytes(b"")  # a version directory (the BPE check comes before loading)
        with pytest.raises(ValueError, match="byte-level BPE.*LiteRT.*UnicodeDecodeWithOffsets"):
            tflite.convert(str(version))


def test_roberta_pretrains_from_text_files_with_dynamic_masking(trained, tmp_path):
    """`run_pretraining --text_files` with RoBERTa: pairs packed `<s> A </s></s> B </s>` with one token type, masks
    never on special tokens, a 2-step `mlm` run; whole-word masking is refused (the BPE marks no words)."""
    from official_bert.data.dynamic_masking import dynamic_masking_dataset
    from official_bert.tasks.pretraining import PretrainingTask
    from official_bert.text.preprocessing import BpeVocab, tokenizer_of

    family, checkpoint, _, _ = trained
    if family != "roberta":
        pytest.skip("the WordPiece layout is covered by tests/tasks/test_run_pretraining.py")
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat.\nIt purred.\nThen it slept.\n\nA dog ran.\nIt barked twice.\n"
                    "Nobody came.\n\nRain fell all day.\nThe river rose.\n")
    tokenizer = tokenizer_of(BpeVocab.find(checkpoint), False)
    special = tokenizer.get_special_tokens_dict()
    cls_id, sep_id = special["start_of_sequence_id"], special["end_of_segment_id"]
    batch = next(iter(dynamic_masking_dataset([str(text)], tokenizer, 4, SEQ, 3)))
    assert not batch["input_type_ids"].numpy().any()
    for row, ids in enumerate(batch["input_word_ids"].numpy()):
        real = ids[:batch["input_mask"].numpy()[row].sum()].tolist()
        separators = [i for i, t in enumerate(real) if t == sep_id]
        assert real[0] == cls_id and len(separators) == 3 and separators[1] == separators[0] + 1
        assert separators[2] == len(real) - 1
        positions = batch["masked_lm_positions"].numpy()[row][batch["masked_lm_weights"].numpy()[row] > 0]
        assert len(positions) and not set(positions.tolist()) & {0, *separators}
    run(PretrainingTask(text_files=str(text), objective="mlm", max_predictions_per_seq=3, num_warmup_steps=1),
        RunConfig(model_dir=str(tmp_path / "mlm"), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                  train_batch_size=4, num_train_steps=2, checkpoint_steps=100, do_eval=False))
    assert (tmp_path / "mlm" / "pretrainer" / "model.safetensors").is_file()
    with pytest.raises(ValueError, match="do_whole_word_mask: RoBERTa's byte-level BPE marks no word"):
        run(PretrainingTask(text_files=str(text), objective="mlm", do_whole_word_mask=True),
            RunConfig(model_dir=str(tmp_path / "wwm"), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                      do_eval=False))
    assert not (tmp_path / "wwm").exists()


def test_extract_features_of_a_roberta_checkpoint_equal_transformers(trained, tmp_path):
    family, checkpoint, _, _ = trained
    if family != "roberta":
        pytest.skip("WordPiece families are covered by test_extract_features.py")
    texts = [("Who was Jim Henson ?", "Jim Henson was a puppeteer"), ("Zürich's café , 2 dogs!", None)]
    source, target = tmp_path / "input.txt", tmp_path / "features.npz"
    source.write_text("".join(f"{a} ||| {b}\n" if b else f"{a}\n" for a, b in texts), encoding="utf-8")
    (result,) = run_forked([("tasks.extract_features", [f"--input_file={source}", f"--output_file={target}",
                                                         f"--init_checkpoint={checkpoint}", "--layers=-1,0",
                                                         f"--max_seq_length={SEQ}"])], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    features = np.load(target)
    reference = transformers.RobertaModel.from_pretrained(str(checkpoint)).eval()
    tokenizer = transformers.RobertaTokenizerFast.from_pretrained(str(checkpoint))
    for index, (text, text_b) in enumerate(texts):
        encoded = tokenizer(text, text_b, return_tensors="pt")
        assert list(features[f"tokens_{index}"]) == tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
        with torch.no_grad():
            hidden = reference(**encoded, output_hidden_states=True).hidden_states
        expected = np.stack([hidden[-1][0].numpy(), hidden[0][0].numpy()], axis=1)  # (tokens, layers, hidden)
        np.testing.assert_allclose(features[f"values_{index}"], expected, atol=1e-5, rtol=0)
    assert not features["truncated"].any()
    from official_bert.pipelines.feature_extractor import FeatureExtractor
    from official_bert.pipelines.loading import load_encoder_and_tokenizer

    encoder, bpe = load_encoder_and_tokenizer(str(checkpoint))
    with pytest.raises(ValueError, match="first_subtoken.*byte-level BPE"):
        FeatureExtractor(encoder, bpe, layers=[-1], seq_length=SEQ, pooling="first_subtoken")
    with pytest.raises(ValueError, match="keeps case"):
        load_encoder_and_tokenizer(str(checkpoint), lower_case=True)


def _roberta_mlm_records(shared_data, checkpoint, path, count=16):
    """Pre-training TFRecords (Google's features) of MRPC sentences as RobertaTokenizerFast packs them, 4 masked."""
    tokenizer = transformers.RobertaTokenizerFast.from_pretrained(str(checkpoint))
    lines = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").splitlines()[1:count + 1]
    rng = np.random.default_rng(0)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for line in lines:
            ids = tokenizer(line.split("\t")[3], truncation=True, max_length=SEQ)["input_ids"]
            positions = np.sort(rng.choice(np.arange(1, len(ids) - 1), 4, replace=False))
            masked = np.array(ids)
            masked[positions] = tokenizer.mask_token_id
            pad = SEQ - len(ids)
            features = {"input_ids": ints(list(masked) + [tokenizer.pad_token_id] * pad),
                        "input_mask": ints([1] * len(ids) + [0] * pad), "segment_ids": ints([0] * SEQ),
                        "masked_lm_positions": ints(positions), "masked_lm_ids": ints(np.array(ids)[positions]),
                        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 4)),
                        "next_sentence_labels": ints([0])}
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return path


def _mask_markers_tokenize_as_transformers(directory):
    """`MaskedPartsPreprocessor` ids equal RobertaTokenizerFast's, with `<mask>` as its files give it (the space before
    it a "Ġ" piece) and as roberta-base's tokenizer.json declares it (`lstrip=True`)."""
    from tokenizers import AddedToken

    from export.mlm_module import BPE_MASK_MARKER, MaskedPartsPreprocessor
    from official_bert.text.preprocessing import tokenizer_from_files

    texts = ["The capital of France is <mask>.", "<mask> likes <mask> , and<mask>", "a  <mask> b", "<mask>",
             "x\t<mask>\n<mask>y", "Zürich 🙂<mask>"]
    bpe = tokenizer_from_files(str(directory / "vocab.json"), False)
    for lstrip in (False, True):
        ours = MaskedPartsPreprocessor(bpe, SEQ, BPE_MASK_MARKER, "roberta", "vocab.json", lstrip=lstrip).tokenize(
            tf.constant(texts)).to_list()
        reference = transformers.RobertaTokenizerFast.from_pretrained(
            str(directory), mask_token=AddedToken("<mask>", lstrip=lstrip, rstrip=False, special=True))
        assert ours == [reference(t, add_special_tokens=False)["input_ids"] for t in texts], lstrip


def test_masked_lm_run_and_export_of_roberta_fill_mask_as_transformers(trained, shared_data, tmp_path):
    """`run_pretraining --objective=mlm` from the RoBERTa checkpoint, exported: `<mask>` found as transformers'
    RobertaTokenizerFast finds it (ids equal), top-k from the model's own head, TF Serving's loader runs it."""

    from export.saved_model import export
    from official_bert import model_dir as model_dirs
    from official_bert.tasks.pretraining import PretrainingTask

    family, checkpoint, _, _ = trained
    if family != "roberta":
        pytest.skip("the WordPiece masked-LM export is covered by tests/export/test_mlm_module.py")
    records = _roberta_mlm_records(shared_data, checkpoint, tmp_path / "train.tfrecord")
    model_dir = tmp_path / "mlm"
    task = PretrainingTask(input_files=str(records), max_predictions_per_seq=4, num_warmup_steps=1, objective="mlm")
    run(task, RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=SEQ,
                        train_batch_size=8, num_train_steps=2, checkpoint_steps=100, do_eval=False))
    version = export(str(model_dir), str(tmp_path / "export"), top_k=3)
    texts = ["The capital of France is <mask>.", "<mask> likes <mask> , and<mask>", "no mask here", "<mask>"]
    reference = transformers.RobertaTokenizerFast.from_pretrained(str(model_dir / "encoder"))
    assert_fill_mask_as_transformers(version, model_dirs.load_model_dir(str(model_dir)), reference, texts, SEQ, 3)
    _mask_markers_tokenize_as_transformers(model_dir / "encoder")
    check = run_python([shared_data.parent / "tools" / "session_loader_check.py", version], timeout=300)
    assert check.returncode == 0 and "FAILED" not in check.stdout, check.stdout[-2000:] + check.stderr[-2000:]
