"""official_bert/data/sentence_corpus.py: reading plain-text pre-training corpora as documents."""

import logging

from official_bert.data import sentence_corpus
from official_bert.data.sentence_corpus import ONE_DOCUMENT_LINES, read_documents


def test_blank_lines_separate_documents_and_whitespace_lines_count_as_blank(tmp_path):
    (tmp_path / "a.txt").write_text("One.\nTwo.\n\n  \nThree.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Four.", encoding="utf-8")
    assert list(read_documents([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])) == [
        ["One.", "Two."], ["Three."], ["Four."]]


def test_a_long_file_without_a_blank_line_is_warned_about_once(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(sentence_corpus, "_warned_one_document", set())
    lines = [f"Sentence {i}." for i in range(ONE_DOCUMENT_LINES + 1)]
    (tmp_path / "flat.txt").write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "split.txt").write_text("\n".join(lines[:10] + [""] + lines), encoding="utf-8")
    (tmp_path / "short.txt").write_text("\n".join(lines[:ONE_DOCUMENT_LINES]), encoding="utf-8")
    paths = [str(tmp_path / name) for name in ("flat.txt", "split.txt", "short.txt")]
    with caplog.at_level(logging.WARNING, logger="official_bert.data.sentence_corpus"):
        assert [len(d) for d in read_documents(paths)] == [len(lines), 10, len(lines), ONE_DOCUMENT_LINES]
        list(read_documents(paths))  # a second epoch
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [f"{paths[0]}: no blank line between its {len(lines)} lines, so they are one document (a "
                        "random next sentence then comes from another file, or from this one); put a blank line "
                        "between documents"]
