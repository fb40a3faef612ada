"""Named BERT presets, one Google-style `bert_config.json` per file.

`bert_base_uncased`, `bert_large_uncased`, and Google's 24 small BERTs `uncased_L-{L}_H-{H}_A-{H/64}`
for L in {2,4,6,8,10,12} and H in {128,256,512,768} (intermediate size 4H).
Read one with `official_bert.BertConfig.from_preset(name)`.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def list_presets() -> list:
    """Names of every preset, sorted."""
    return sorted(f[: -len(".json")] for f in os.listdir(_HERE) if f.endswith(".json"))


def preset_path(name: str) -> str:
    """Path of the preset's JSON file; raises ValueError listing the known names if there is none."""
    path = os.path.join(_HERE, f"{name}.json")
    if not os.path.isfile(path):
        raise ValueError(f"Unknown BERT preset {name!r}; known presets: {', '.join(list_presets())}")
    return path
