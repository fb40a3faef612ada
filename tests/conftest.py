"""Shared fixtures: the location of ../shared/data and tiny configs."""

import os
import pathlib
import tempfile

import pytest

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("OFFICIAL_BERT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def _runs_tests(config):
    """Whether this process runs tests: an xdist worker, or pytest itself without xdist (xdist's controller runs
    none and does not import TensorFlow)."""
    return hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no"


def pytest_configure(config):
    """Each process that runs tests traces without op tracebacks (`tf_op_tracebacks`)."""
    if _runs_tests(config):
        from tf_op_tracebacks import leave_out_op_tracebacks

        leave_out_op_tracebacks()


def pytest_collection_finish(session):
    """Each process that runs tests freezes its heap once the test modules are imported (TensorFlow, Keras, torch,
    transformers: about 580,000 objects): Python's full garbage collections, which tracing and Keras trigger by
    the thousand, then scan only the objects made since instead of the whole heap each time (`gc.freeze`)."""
    import gc

    if _runs_tests(session.config):
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def temporary_files_under_pytests_own(tmp_path_factory):
    """The temporary files of the tests and of every process they start go under pytest's temporary directory
    (which keeps the last three sessions), not /tmp: TensorFlow's autograph sources, TFDS's metadata folders, the
    scratch vocab of a run killed on purpose (its `finally` never runs). Each worker gets its own."""
    path = str(tmp_path_factory.mktemp("tmp"))
    previous = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = path, path
    yield
    if previous[0] is None:
        os.environ.pop("TMPDIR")
    else:
        os.environ["TMPDIR"] = previous[0]
    tempfile.tempdir = previous[1]


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    """The real public data beside the project (../shared/data). Missing data fails under CI, skips elsewhere."""
    if not SHARED_DATA.is_dir():
        message = f"shared data not found at {SHARED_DATA} (set OFFICIAL_BERT_SHARED_DATA)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA


@pytest.fixture(scope="session")
def minilm_dir(shared_data) -> pathlib.Path:
    return shared_data / "all-MiniLM-L6-v2"


@pytest.fixture
def tiny_config():
    """A 2-layer, hidden-32 BERT for fast unit tests."""
    from official_bert import BertConfig

    return BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=40, type_vocab_size=2)


def write_tiny_checkpoint(path, num_hidden_layers, shared_data, max_position_embeddings=64):
    """A randomly initialised hidden-32 BERT with the real uncased vocab, saved as a Hugging Face directory at `path`.

    Args:
        path: the directory to create (pathlib.Path).
        num_hidden_layers: its layer count.
        shared_data: the `shared_data` fixture's directory (which skips, or fails under CI, when it is missing).
        max_position_embeddings: the longest sequence it reads.
    """
    from official_bert import BertConfig, BertEncoder
    from official_bert.checkpoints import save_encoder

    config = BertConfig(hidden_size=32, num_hidden_layers=num_hidden_layers, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=max_position_embeddings)
    save_encoder(BertEncoder(config), path, vocab_file=shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")
    return path


@pytest.fixture(scope="session")
def tiny_checkpoint(shared_data, tmp_path_factory):
    """A 1-layer `write_tiny_checkpoint` (for CLI runs): what a run, an export or a resume does with a model does not
    depend on its depth, and a second layer makes a tiny MRPC run about a third slower. Tests of depth itself (pruning
    layers, choosing a student's layers, every layer's outputs) build their own deeper models."""
    return write_tiny_checkpoint(tmp_path_factory.mktemp("tiny_bert"), num_hidden_layers=1, shared_data=shared_data)


@pytest.fixture
def hub_cache(tiny_checkpoint, tmp_path, monkeypatch):
    """huggingface_hub's cache (HF_HUB_CACHE's layout) holding the tiny checkpoint as `tiny-org/tiny-bert`, offline."""
    import shutil

    constants = pytest.importorskip("huggingface_hub.constants")
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--tiny-org--tiny-bert"
    shutil.copytree(tiny_checkpoint, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    for name, value in (("HF_HUB_CACHE", str(tmp_path / "hub")), ("HF_HUB_OFFLINE", True)):
        monkeypatch.setenv(name, str(value) if name == "HF_HUB_CACHE" else "1")
        monkeypatch.setattr(constants, name, value)  # (read when huggingface_hub is imported)
    return repo / "snapshots" / revision


def logger_messages(caplog, logger):
    """The messages caplog captured from `logger` (a name) alone: caplog takes every logger's, and TensorFlow warns
    of a tf.function retraced often, counting the calls of every model in the process."""
    return [record.getMessage() for record in caplog.records if record.name == logger]
