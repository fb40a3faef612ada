"""Task models from a pretrained checkpoint (`from_pretrained`): a directory, a model_dir or a Hugging Face hub id
read from huggingface_hub's cache offline; and the arguments it refuses."""

import numpy as np
import pytest

from official_bert import BertClassifier, BertSpanLabeler, BertTokenClassifier

pytestmark = pytest.mark.slow  # builds encoders from checkpoints


def _same_weights(a, b):
    assert len(a.weights) == len(b.weights)
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_a_hub_id_loads_from_the_hub_cache_offline(hub_cache, tiny_checkpoint):
    from_hub = BertClassifier.from_pretrained("tiny-org/tiny-bert", labels=["a", "b"], seq_length=16)
    from_directory = BertClassifier.from_pretrained(tiny_checkpoint, labels=["a", "b"], seq_length=16)
    _same_weights(from_hub.encoder, from_directory.encoder)
    assert from_hub.preprocessor.tokenizer.get_vocab() == from_directory.preprocessor.tokenizer.get_vocab()
    from official_bert.pipelines.loading import load_encoder_and_tokenizer  # (extract_features' --init_checkpoint)

    encoder, tokenizer = load_encoder_and_tokenizer("tiny-org/tiny-bert")
    _same_weights(encoder, from_directory.encoder)
    assert tokenizer.get_vocab() == from_directory.preprocessor.tokenizer.get_vocab()
    with pytest.raises(FileNotFoundError, match="^tiny-org/absent: no such directory, and not fetched as a Hugging "
                                                "Face hub id"):
        BertClassifier.from_pretrained("tiny-org/absent", num_classes=2)


def test_a_model_dir_gives_its_trained_model_or_its_encoder_under_a_new_head(tiny_checkpoint, tmp_path):
    from official_bert.pipelines.task_models import write_model_dir

    model = BertTokenClassifier.from_pretrained(tiny_checkpoint, labels=["O", "B-X", "I-X"], seq_length=16)
    write_model_dir(model, str(tmp_path))
    trained = BertTokenClassifier.from_pretrained(tmp_path)  # its kind, no new labels: the model as trained
    _same_weights(trained, model)
    assert trained.label_names == ("O", "B-X", "I-X") and trained.preprocessor.seq_length == 16
    texts = ["EU rejects German call"]
    np.testing.assert_allclose(trained.predict(texts, verbose=0), model.predict(texts, verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match=r"loaded as it was trained, without \['dropout_rate'\]; pass labels"):
        BertTokenClassifier.from_pretrained(tmp_path, dropout_rate=0.2)
    again = BertClassifier.from_pretrained(tmp_path, num_classes=2, seq_length=16)  # another kind: its encoder
    _same_weights(again.encoder, model.encoder)
    for name, ids in again.preprocessor([np.array(texts)]).items():
        np.testing.assert_array_equal(ids.numpy(), model.preprocessor([np.array(texts)])[name].numpy())


def test_from_pretrained_refuses_arguments_that_do_not_fit(tiny_checkpoint):
    with pytest.raises(ValueError, match=r"num_classes=3 but 2 labels \['a', 'b'\]"):
        BertClassifier.from_pretrained(tiny_checkpoint, labels=["a", "b"], num_classes=3)
    with pytest.raises(ValueError, match=r"needs labels=\[...\] or num_labels=..."):
        BertTokenClassifier.from_pretrained(tiny_checkpoint)
    with pytest.raises(ValueError, match="BertSpanLabeler takes no labels"):
        BertSpanLabeler.from_pretrained(tiny_checkpoint, labels=["a"])
    with pytest.raises(ValueError, match="labels must be distinct"):
        BertClassifier.from_pretrained(tiny_checkpoint, labels=["a", "a"])
    with pytest.raises(ValueError, match="seq_length"):
        BertClassifier.from_pretrained(tiny_checkpoint, num_classes=2, seq_length=65)  # 64 positions


def test_a_hub_id_without_huggingface_hub_names_the_pip_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # (import fails)
    with pytest.raises(ImportError, match="^org/absent-model: no such directory; to fetch it as a Hugging Face hub "
                                          "id, pip install huggingface_hub$"):
        BertClassifier.from_pretrained("org/absent-model", num_classes=2)


def test_the_staging_model_dir_records_what_the_export_serves(tiny_checkpoint, tmp_path):
    from official_bert.model_dir import load_model_dir
    from official_bert.pipelines.task_models import write_model_dir

    model = BertClassifier.from_pretrained(tiny_checkpoint, labels=["no", "yes"], seq_length=24,
                                           text_features=("premise", "hypothesis"))
    write_model_dir(model, str(tmp_path))
    loaded = load_model_dir(str(tmp_path))
    assert loaded.kind == "classification" and loaded.max_seq_length == 24 and loaded.lower_case
    assert {k: loaded.info[k] for k in ("label_names", "is_regression", "text_features")} == {
        "label_names": ["no", "yes"], "is_regression": False, "text_features": ["premise", "hypothesis"]}
    _same_weights(loaded.model, model)


def test_a_model_dirs_settings_travel_with_the_model_it_gives(tiny_checkpoint, tmp_path):
    """A tuned multi-label threshold (and any task.json setting) read by from_pretrained is written back by the
    export's staging model_dir and kept by get_config; a span labeler without SQuAD's settings is refused."""
    from official_bert.model_dir import read_json, read_task_info, write_json
    from official_bert.pipelines.task_models import write_model_dir

    model = BertClassifier.from_pretrained(tiny_checkpoint, labels=["a", "b", "c"], multi_label=True, seq_length=16)
    write_model_dir(model, str(tmp_path / "first"))
    info = read_json(tmp_path / "first" / "task.json")
    write_json(str(tmp_path / "first" / "task.json"), {**info, "threshold": 0.3})  # as --tune_threshold leaves it
    trained = BertClassifier.from_pretrained(tmp_path / "first")
    assert trained.get_config()["task_settings"]["threshold"] == 0.3
    write_model_dir(trained, str(tmp_path / "again"))
    assert {k: read_task_info(str(tmp_path / "again"))[k] for k in ("threshold", "multi_label", "label_names")} == {
        "threshold": 0.3, "multi_label": True, "label_names": ["a", "b", "c"]}
    with pytest.raises(ValueError, match="^BertSpanLabeler.export: a SQuAD export serves the answer settings"):
        write_model_dir(BertSpanLabeler.from_pretrained(tiny_checkpoint, seq_length=16), str(tmp_path / "squad"))
    assert not (tmp_path / "squad").exists()  # refused before anything is written
    with pytest.raises(FileExistsError, match="again: not empty"):
        write_model_dir(trained, str(tmp_path / "again"))


def test_a_roberta_checkpoint_gives_its_byte_level_preprocessor_and_model_dir(tmp_path):
    from official_bert.model_dir import load_model_dir
    from official_bert.pipelines.task_models import write_model_dir
    from tests.tiny_families import roberta_directory

    model = BertClassifier.from_pretrained(roberta_directory(tmp_path / "roberta", 40), labels=["x", "y"],
                                           seq_length=12)
    assert model.preprocessor.layout == "roberta"
    texts = ["a cat sat", "the mat"]
    logits = model.predict(texts, verbose=0)  # (2, 2)
    write_model_dir(model, str(tmp_path / "model_dir"))  # vocab.json + merges.txt, from the vocabulary it holds
    again = BertClassifier.from_pretrained(tmp_path / "model_dir")
    assert not again.preprocessor.tokenizer.get_config()["vocab"] and again.preprocessor.layout == "roberta"
    np.testing.assert_allclose(again.predict(texts, verbose=0), logits, atol=1e-6)
    assert load_model_dir(str(tmp_path / "model_dir")).config.model_type == "roberta"


def test_save_pretrained_writes_what_transformers_loads_with_the_labels_and_tokenizer(tiny_checkpoint, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    model = BertClassifier.from_pretrained(tiny_checkpoint, labels=["no", "yes"], seq_length=24)
    assert model.save_pretrained(str(tmp_path / "hf")) == str(tmp_path / "hf")
    reference, info = transformers.AutoModelForSequenceClassification.from_pretrained(
        tmp_path / "hf", attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert reference.config.id2label == {0: "no", 1: "yes"}
    texts = ["The cat sat on the mat.", "Nobody came."]
    encoded = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = reference.eval()(**encoded).logits.numpy()
    np.testing.assert_allclose(model.predict(texts, verbose=0), theirs, atol=1e-5)
    with pytest.raises(FileExistsError, match="model.safetensors exists"):
        model.save_pretrained(str(tmp_path / "hf"))
    span_labeler = BertSpanLabeler.from_pretrained(tiny_checkpoint, seq_length=16)  # no SQuAD settings needed
    span_labeler.save_pretrained(str(tmp_path / "qa"))
    assert transformers.AutoConfig.from_pretrained(tmp_path / "qa").architectures == ["BertForQuestionAnswering"]
    with pytest.raises(ValueError, match="BertClassifier.save_pretrained writes the model's tokenizer beside it"):
        BertClassifier(model.encoder, num_classes=2).save_pretrained(str(tmp_path / "bare"))


def test_a_transformers_task_checkpoint_comes_with_its_head_and_labels(tiny_checkpoint, tmp_path, caplog):
    """As transformers' `AutoModelForSequenceClassification.from_pretrained`: the head and `id2label` of a task
    checkpoint come with it; given labels in another order, its outputs follow them; a head of another kind stays
    out."""
    texts = ["The cat sat on the mat.", "Nobody came."]
    source = BertClassifier.from_pretrained(tiny_checkpoint, labels=["pos", "neg"], seq_length=24)
    source.save_pretrained(str(tmp_path / "hf"))
    expected = source.predict(texts, verbose=0)

    model = BertClassifier.from_pretrained(tmp_path / "hf", seq_length=24)
    assert model.label_names == ("pos", "neg")
    np.testing.assert_allclose(model.predict(texts, verbose=0), expected, atol=1e-6)
    swapped = BertClassifier.from_pretrained(tmp_path / "hf", labels=["neg", "pos"], seq_length=24)
    np.testing.assert_allclose(swapped.predict(texts, verbose=0), expected[:, ::-1], atol=1e-6)
    with caplog.at_level("WARNING", logger="official_bert.checkpoints.loading"):
        BertTokenClassifier.from_pretrained(tmp_path / "hf", labels=["O", "B-X"], seq_length=24)
    assert "its head is a BertForSequenceClassification's, not a BertForTokenClassification's" in caplog.text
