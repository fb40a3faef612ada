"""official_bert.cli.check_command_line: the usage errors every entry point shares."""

import pytest
from absl import app, flags

from official_bert.cli import check_command_line

flags.DEFINE_string("cli_test_input", None, "A flag of this test only.")


def test_stray_words_and_missing_required_flags_are_usage_errors():
    check_command_line(["prog"])
    check_command_line(None)  # main called directly
    with pytest.raises(app.UsageError, match=r"unexpected arguments: \['extra', 'words'\]"):
        check_command_line(["prog", "extra", "words"])
    with pytest.raises(app.UsageError, match="--cli_test_input is required"):
        check_command_line(["prog"], required=("cli_test_input",))
    flags.FLAGS["cli_test_input"].value = "given"
    try:
        check_command_line(["prog"], required=("cli_test_input",))
    finally:
        flags.FLAGS["cli_test_input"].value = None
