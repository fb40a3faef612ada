"""Output files named by a flag: the folder made, a file that cannot be written one line naming the flag and why
(a file in the way of its folder, a folder in its place, /proc), an existing file refused unless overwritten, an
input file always."""

import os

import pytest

from official_bert.output_files import prepare_output_file, writing


def _message(flag, path, why):
    return f"--{flag}={path} cannot be written: {why}"


def test_the_folder_is_made_and_no_file_is_left(tmp_path):
    path = tmp_path / "new" / "deeper" / "features.jsonl"
    prepare_output_file("output_file", str(path))
    assert path.parent.is_dir() and not path.exists()


def test_an_existing_file_is_refused_unless_overwrite_and_kept_as_it_was(tmp_path):
    path = tmp_path / "features.jsonl"
    path.write_text("earlier\n")
    with pytest.raises(ValueError) as error:
        prepare_output_file("output_file", str(path))
    assert str(error.value) == (f"--output_file={path} already exists; name a new file, or pass --overwrite to "
                                f"replace it")
    prepare_output_file("output_file", str(path), overwrite=True)
    assert path.read_text() == "earlier\n"


def test_an_input_file_is_refused_even_with_overwrite(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text("my text\n")
    os.symlink(path, tmp_path / "link.txt")
    for output in (path, tmp_path / "link.txt"):  # the same file under another name too
        with pytest.raises(ValueError, match=f"--output_file={output} is the input file \\(--input_file\\); name "
                                             f"another file"):
            prepare_output_file("output_file", str(output), overwrite=True, inputs=[("input_file", str(path))])
    assert path.read_text() == "my text\n"


@pytest.mark.parametrize("target", ["notes.txt/features.jsonl", "notes.txt/sub/features.jsonl"])
def test_a_file_in_the_way_of_the_folder_is_named(tmp_path, target):
    (tmp_path / "notes.txt").write_text("mine\n")
    path = tmp_path / target
    with pytest.raises(ValueError) as error:
        prepare_output_file("output_file", str(path))
    assert str(error.value) == _message("output_file", path, f"{tmp_path / 'notes.txt'} is a file, not a folder")
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_folder_in_the_files_place_is_named(tmp_path):
    with pytest.raises(ValueError) as error:
        prepare_output_file("output", str(tmp_path))
    assert str(error.value) == _message("output", tmp_path, "it is a folder; name a file")


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux's /proc")
@pytest.mark.parametrize("path, why", [
    ("/proc/version", None),  # a file that takes no writes, even as root
    ("/proc/features.jsonl", "No such file or directory (the folder /proc takes no new files)"),
    ("/proc/out/features.jsonl", "cannot make the folder /proc/out (No such file or directory)"),
])
def test_a_path_under_proc_is_one_line(path, why):
    with pytest.raises(ValueError) as error:
        prepare_output_file("output_file", path, overwrite=True)
    assert str(error.value).startswith(_message("output_file", path, why or ""))
    assert "\n" not in str(error.value)


def test_writing_turns_an_os_error_into_the_flags_line(tmp_path):
    path = tmp_path / "out.npz"
    with pytest.raises(ValueError) as error:
        with writing("output_file", str(path)):
            raise OSError(5, "Input/output error")
    assert str(error.value) == _message("output_file", path, "Input/output error")
    with pytest.raises(KeyError):  # anything else passes through
        with writing("output_file", str(path)):
            raise KeyError("x")
