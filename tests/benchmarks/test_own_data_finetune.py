"""benchmarks.own_data_finetune's data: CoNLL-2003 sentences recast as multi-label files that our reader reads back."""

import json

from benchmarks.own_data_finetune import entity_types, multi_hot, write_task_files
from official_bert.data.labeled_text_files import read_labeled_texts

CONLL = {
    "train.txt": "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\n"
                 "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\nIt PRP B-NP O\nrains VBZ B-VP O\n\n"
                 "Paris NNP B-NP B-LOC\nand CC O O\nLyon NNP B-NP B-LOC\n",
    "valid.txt": "Bonn NNP B-NP B-LOC\nsaid VBD B-VP O\n\nNo DT B-NP O\n",
}


def _conll_dir(tmp_path):
    folder = tmp_path / "conll"
    folder.mkdir()
    for name, text in CONLL.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_entity_types_are_the_types_a_sentence_names():
    assert entity_types(["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]) == ["LOC", "PER"]
    assert entity_types(["O", "O"]) == []


def test_the_written_files_read_back_as_the_users_multi_label_files(tmp_path):
    paths, splits = write_task_files(str(_conll_dir(tmp_path)), str(tmp_path / "data"), None, seed=1)
    assert splits["train"] == (["EU rejects German", "Peter Blackburn", "It rains", "Paris and Lyon"],
                               [["MISC", "ORG"], ["PER"], [], ["LOC"]])
    assert splits["dev"] == (["Bonn said", "No"], [["LOC"], []])
    for split in ("train", "dev"):
        read = read_labeled_texts(paths[split], multi_label=True)
        assert (list(read.text_a), list(read.labels)) == splits[split]  # a sentence without entities: no label
    first = json.loads(open(paths["train"], encoding="utf-8").readline())
    assert first == {"text": "EU rejects German", "label": ["MISC", "ORG"]}


def test_a_seeded_training_subset_keeps_file_order(tmp_path):
    conll = str(_conll_dir(tmp_path))
    _, first = write_task_files(conll, str(tmp_path / "a"), 2, seed=7)
    _, again = write_task_files(conll, str(tmp_path / "b"), 2, seed=7)
    texts = first["train"][0]
    assert len(texts) == 2 and texts == again["train"][0]
    everything = ["EU rejects German", "Peter Blackburn", "It rains", "Paris and Lyon"]
    assert sorted(texts, key=everything.index) == texts
    assert len(first["dev"][0]) == 2  # dev stays whole


def test_multi_hot_rows_follow_the_label_order():
    assert multi_hot([["PER", "LOC"], []], ["LOC", "ORG", "PER"]).tolist() == [[1, 0, 1], [0, 0, 0]]
