"""RoBERTa and DistilBERT end to end, in-process: MRPC fine-tune from a tiny transformers checkpoint, the model_dir
(encoder/ that transformers loads, the family's tokenizer files), the raw-text export, TFLite's refusal of the BPE.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from export.saved_model import build_module
from official_bert.runner import RunConfig, run
from official_bert.tasks.classification import ClassificationTask
from official_bert.tasks.tagging import TaggingTask
from official_bert.text import load_preprocessor

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SEQ = 32
TINY = dict(num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)


def _roberta_checkpoint(shared_data, directory):
    """A tiny random `RobertaModel` with a byte-level BPE (500 merges) trained on MRPC text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    lines = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").splitlines()[1:2000]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator([field for line in lines for field in line.split("\t")[3:5]], trainers.BpeTrainer(
        vocab_size=256 + 5 + 500, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    directory.mkdir()
    bpe.model.save(str(directory))
    config = transformers.RobertaConfig(vocab_size=bpe.get_vocab_size(), hidden_size=32, **TINY,
                                        max_position_embeddings=SEQ + 2, type_vocab_size=1, pad_token_id=1)
    torch.manual_seed(0)
    transformers.RobertaModel(config).save_pretrained(directory)
    return directory


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
        with pytest.raises(ValueError, match="byte-level BPE.*LiteRT.*UnicodeDecodeWithOffsets"):
            tflite.convert(str(version))


def test_a_task_without_bpe_support_refuses_roberta_before_writing(trained, shared_data, tmp_path):
    family, checkpoint, _, _ = trained
    if family != "roberta":
        pytest.skip("WordPiece families run every task")
    config = RunConfig(model_dir=str(tmp_path / "ner"), init_checkpoint=str(checkpoint), max_seq_length=SEQ)
    with pytest.raises(ValueError, match="tagging.*byte-level BPE is not supported"):
        run(TaggingTask(str(shared_data / "conll2003" / "hf-iob2")), config)
    assert not (tmp_path / "ner").exists()
