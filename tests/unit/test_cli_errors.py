"""The CLI's one error type and its one printer (issue 21 §4): a command raises CommandError
(message, exit status); the entry point prints it once, as ``etu: <message>`` or, with
``--json``, ``{"error": "<message>"}`` on stdout. What a command says on the way (notices,
warnings) stays text on stderr: no line becomes an error because of how it starts."""

from __future__ import annotations

import argparse
import json
import types

import pytest

from etu.tui import cli
from etu.tui.cli.errors import CommandError, notice


def _fake_command(monkeypatch, body) -> None:
    """``etu inspect`` replaced by a command whose run() is ``body(out, err)``."""

    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true")

    module = types.SimpleNamespace(HELP="a test command", configure=configure,
                                   run=lambda args, out, err: body(out, err))  # fmt: skip
    monkeypatch.setattr(cli, "command_module", lambda name: module)


@pytest.mark.parametrize("as_json", [False, True])
def test_an_error_is_printed_once_and_notices_stay_notices(monkeypatch, capsys, as_json):
    def body(out, err) -> int:
        notice(err, "warning: the settings name a folder that is gone")
        raise CommandError("model.pte: not a program", 3)

    _fake_command(monkeypatch, body)
    status = cli.main(["inspect", *(["--json"] if as_json else [])])
    captured = capsys.readouterr()
    assert status == 3
    assert captured.err.startswith("etu: warning: the settings name a folder that is gone\n")
    if as_json:
        assert captured.out == '{"error": "model.pte: not a program"}\n'
        assert "not a program" not in captured.err
    else:
        assert captured.out == ""
        assert captured.err.endswith("etu: model.pte: not a program\n")


def test_a_status_that_is_an_outcome_prints_no_error(monkeypatch, capsys) -> None:
    """`etu run --json` ending at its time limit (4) printed its notices as {"error": ...}
    unless the command listed which statuses were errors; now an error is only raised."""

    def body(out, err) -> int:
        notice(err, "run ended: time_limit: no verdict within the time limit")
        out.write(json.dumps({"reason": "time_limit"}) + "\n")
        return 4

    _fake_command(monkeypatch, body)
    assert cli.main(["inspect", "--json"]) == 4
    captured = capsys.readouterr()
    assert captured.out == '{"reason": "time_limit"}\n'
    assert captured.err == "etu: run ended: time_limit: no verdict within the time limit\n"


def test_an_unexpected_exception_is_one_line_status_1(monkeypatch, capsys) -> None:
    def body(out, err) -> int:
        raise ValueError("nobody expected this\nsecond line")

    _fake_command(monkeypatch, body)
    assert cli.main(["inspect", "--json"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line) == {"error": "unexpected ValueError: nobody expected this"}


def test_a_multi_line_message_stays_one_line(monkeypatch, capsys) -> None:
    def body(out, err) -> int:
        raise CommandError("first\nsecond")

    _fake_command(monkeypatch, body)
    assert cli.main(["inspect"]) == 2
    assert capsys.readouterr().err == "etu: first second\n"


def test_no_command_writes_an_etu_line_by_hand() -> None:
    """Errors are raised (CommandError) and notices go through notice(): a hand-written
    ``err.write("etu: ...")`` would be text under --json, where an error must be JSON."""
    import re
    from pathlib import Path

    folder = Path(cli.__file__).parent
    by_hand = re.compile(r"""(\w+)\.write\(\s*f?["']etu: """)  # \s: a string on the next line too
    found = [f"{path.name}: {match.group(0)!r}"
             for path in sorted(folder.glob("*.py")) if path.name != "errors.py"
             for match in by_hand.finditer(path.read_text())
             if match.group(1) != "out"]  # fmt: skip
    assert found == []
