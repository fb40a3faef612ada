"""Fixtures of the export tests: tiny model_dirs (see model_dirs.py) and their SavedModel exports."""

import pytest

from model_dirs import CONLL_LABELS, tiny_bert_config, write_model_dir


@pytest.fixture(scope="session")
def vocab_file(shared_data):
    return str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")


@pytest.fixture(scope="session")
def classifier_dir(tmp_path_factory, vocab_file):
    """A MRPC (sentence-pair) classifier model_dir, sequence length 64."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.classifier import BertClassifier

    keras.utils.set_random_seed(1)
    model = BertClassifier(BertEncoder(tiny_bert_config()), 2)
    info = {"task": "MRPC", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2}
    return write_model_dir(tmp_path_factory.mktemp("models") / "mrpc", model, info, vocab_file, 64)


@pytest.fixture(scope="session")
def ner_dir(tmp_path_factory, vocab_file):
    """A CoNLL-2003 token classifier model_dir, sequence length 48."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.token_classifier import BertTokenClassifier

    keras.utils.set_random_seed(2)
    model = BertTokenClassifier(BertEncoder(tiny_bert_config()), len(CONLL_LABELS))
    info = {"task": "ner", "label_names": CONLL_LABELS, "num_labels": len(CONLL_LABELS)}
    return write_model_dir(tmp_path_factory.mktemp("models") / "ner", model, info, vocab_file, 48)


@pytest.fixture(scope="session")
def exports(tmp_path_factory, classifier_dir, ner_dir):
    """`export.saved_model.export` of the tiny classifier and tagger: name -> version directory."""
    from export.saved_model import export

    root = tmp_path_factory.mktemp("exports")
    return {"classifier": export(str(classifier_dir), str(root / "mrpc")),
            "tagger": export(str(ner_dir), str(root / "ner"))}
