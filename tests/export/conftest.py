"""Fixtures of the export tests: tiny model_dirs (see model_dirs.py) and their SavedModel exports."""

import pytest

from classifier_model_dirs import mrpc_task_info
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

    keras.utils.set_random_seed(4)  # a seed whose model gives both labels on MRPC's dev pairs
    model = BertClassifier(BertEncoder(tiny_bert_config()), 2)
    info = mrpc_task_info()
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
def exports(export_of):
    """`export.saved_model.export` of the tiny classifier and tagger: name -> version directory."""
    return {"classifier": export_of("classifier"), "tagger": export_of("tagger")}


@pytest.fixture(scope="session")
def model_dir_of(tmp_path_factory, vocab_file, classifier_dir, ner_dir, tiny_checkpoint):
    """kind -> a tiny model_dir of that kind, each written once a worker (the kinds of test_session_loader.py)."""
    from model_dirs import masked_lm_dir, multiple_choice_dir, regression_dir, squad_dir

    root = tmp_path_factory.mktemp("kinds")
    build = {"classifier": lambda: classifier_dir, "tagger": lambda: ner_dir, "encoder": lambda: tiny_checkpoint,
             "regression": lambda: regression_dir(root / "stsb", vocab_file),
             "squad_v1": lambda: squad_dir(root / "squad_v1", vocab_file, False),
             "squad_v2": lambda: squad_dir(root / "squad_v2", vocab_file, True),
             "masked_lm": lambda: masked_lm_dir(root / "pretraining", vocab_file),
             "multiple_choice": lambda: multiple_choice_dir(root / "multiple_choice", vocab_file)}
    made = {}

    def model_dir(kind):
        if kind not in made:
            made[kind] = build[kind]()
        return made[kind]

    return model_dir


@pytest.fixture(scope="session")
def export_of(tmp_path_factory, model_dir_of):
    """(kind, precision) -> the version directory of `export.saved_model.export(model_dir_of(kind),
    precision=precision)`, exported once a worker (an export of a tiny model costs seconds of tracing).
    Tests must not write into it."""
    from export.saved_model import export

    root = tmp_path_factory.mktemp("shared_exports")
    made = {}

    def version_dir(kind, precision="float32"):
        if (kind, precision) not in made:
            made[kind, precision] = export(str(model_dir_of(kind)), str(root / f"{kind}_{precision}"),
                                           precision=precision)
        return made[kind, precision]

    return version_dir


@pytest.fixture(scope="session")
def saved_of(export_of):
    """(kind, precision) -> `tf.saved_model.load` of `export_of(kind, precision)`, loaded once a worker. Tests only
    call its signatures."""
    import functools

    import tensorflow as tf

    return functools.cache(lambda kind, precision="float32": tf.saved_model.load(export_of(kind, precision)))
