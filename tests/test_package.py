"""`import official_bert` registers every Keras object of ours and exports the task models."""

import pathlib

import pytest

from tests.tasks.forked_commands import run_python

pytestmark = pytest.mark.slow

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _save(model_file, logits_file):
    """A compiled, trained tiny classifier saved as .keras (in-process: the fresh process is the loading one)."""
    import numpy as np

    from official_bert.config import BertConfig
    from official_bert.models.classifier import BertClassifier
    from official_bert.models.encoder import BertEncoder
    from official_bert.optimization import create_optimizer

    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=40)
    model = BertClassifier(BertEncoder(config), 3)
    model.compile(optimizer=create_optimizer(1e-3, 10, 1))
    model.fit(_inputs(), np.array([0, 2]), epochs=1, verbose=0)
    model.save(model_file)
    np.save(logits_file, model.predict(_inputs(), verbose=0))


def _inputs():
    """The inputs LOAD below builds too."""
    import numpy as np

    return {"input_word_ids": np.arange(16, dtype="int32").reshape(2, 8) % 100,
            "input_mask": np.ones((2, 8), "int32"), "input_type_ids": np.zeros((2, 8), "int32")}


# A process that imports nothing of ours but the package itself (a child of the fork server that imported only
# TensorFlow).
LOAD = """
import keras
import numpy as np
import official_bert

model = keras.saving.load_model(sys.argv[1])
inputs = {"input_word_ids": np.arange(16, dtype="int32").reshape(2, 8) % 100,
          "input_mask": np.ones((2, 8), "int32"), "input_type_ids": np.zeros((2, 8), "int32")}
np.testing.assert_allclose(model.predict(inputs, verbose=0), np.load(sys.argv[2]), atol=1e-6)
print(type(model).__name__, type(model.optimizer).__name__, int(model.optimizer.iterations.numpy()))
model.fit(inputs, np.array([0, 2]), epochs=1, verbose=0)  # training goes on from the restored state
print(int(model.optimizer.iterations.numpy()))
"""


def _python(code, *args):
    return run_python(["-c", "import sys\n" + code, *args], cwd=REPO_ROOT)


def test_a_compiled_model_saved_as_keras_reloads_after_importing_the_package(tmp_path):
    _save(str(tmp_path / "model.keras"), str(tmp_path / "logits.npy"))
    loaded = _python(LOAD, tmp_path / "model.keras", tmp_path / "logits.npy")
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.split() == ["BertClassifier", "AdamW", "1", "2"]


def test_the_task_models_are_importable_from_the_package():
    import official_bert
    from official_bert.models import (BertClassifier, BertEncoder, BertMultipleChoice, BertPretrainer,
                                      BertSpanLabeler, BertTokenClassifier)

    for model in (BertClassifier, BertEncoder, BertMultipleChoice, BertPretrainer, BertSpanLabeler,
                  BertTokenClassifier):
        assert getattr(official_bert, model.__name__) is model
        assert model.__name__ in official_bert.__all__
