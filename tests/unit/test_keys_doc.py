"""The key table of docs/console.md is generated from etu.tui.keys.KEYS, and every binding
id the docs name exists (the README once listed ``history.*``, which no keymap can name).

Regenerate the table with ``python -m etu.tui.keys --write docs/console.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from etu.tui.keys import BEGIN, END, KEYS, binding_ids, key_label, main, markdown_table

ROOT = Path(__file__).resolve().parent.parent.parent
CONSOLE_DOC = ROOT / "docs" / "console.md"
CODE = re.compile(r"`([^`]+)`")
ID_HEADERS = {"binding id", "binding ids", "id"}
KEYMAP_ENTRY = re.compile(r"^\s*`?([A-Za-z_][\w.*-]*)\s*=\s*\"[^\"]*\"`?")


def _block(text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n")


def test_the_docs_key_table_is_generated_from_keys() -> None:
    table = markdown_table()
    assert _block(CONSOLE_DOC.read_text(encoding="utf-8")) == table, (
        "docs/console.md's key table is out of date: run "
        "`python -m etu.tui.keys --write docs/console.md`. It should read:\n" + table
    )


def test_the_table_has_one_line_per_row_and_its_keys_as_typed() -> None:
    lines = markdown_table().splitlines()
    assert len(lines) == 2 + len(KEYS)
    assert key_label("question_mark") == "?" and key_label("f1") == "F1"
    assert key_label("ctrl+f") == "ctrl+f" and key_label("right_square_bracket") == "]"
    help_line = next(line for line in lines if line.endswith("| `help` |"))
    assert "`?` `F1`" in help_line


def test_write_replaces_only_the_block(tmp_path: Path, capsys) -> None:
    doc = tmp_path / "console.md"
    doc.write_text(f"# Keys\n\nbefore\n\n{BEGIN}\nstale\n{END}\n\nafter\n")
    assert main(["--write", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# Keys\n\nbefore\n\n") and text.endswith(f"{END}\n\nafter\n")
    assert _block(text) == markdown_table()
    (tmp_path / "plain.md").write_text("no markers\n")
    assert main(["--write", str(tmp_path / "plain.md")]) == 2
    assert "plain.md: no <!-- keys:begin -->" in capsys.readouterr().err


def mentioned_binding_ids(text: str) -> set[str]:
    """The binding ids a page names: the id column of a table headed ``Binding id`` (or
    ``id``), and the entries of a ``[keymap]`` table, in a TOML block or inline
    (`` `start_run = "f5"` `` in a paragraph about the keymap)."""
    found: set[str] = set()
    column = None  # the id column of the table being read
    in_keymap = False  # inside a [keymap] table of a TOML block
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            cells = [c.strip().lower() for c in line.strip().strip("|").split("|")]
            if column is None and ID_HEADERS & set(cells):
                column = next(i for i, c in enumerate(cells) if c in ID_HEADERS)
            elif column is not None and column < len(cells):
                found |= set(CODE.findall(line.strip().strip("|").split("|")[column]))
        else:
            column = None
        stripped = line.strip()
        if stripped.startswith("["):
            in_keymap = stripped == "[keymap]"
        elif stripped.startswith("```"):
            in_keymap = False
        elif in_keymap and (entry := KEYMAP_ENTRY.match(stripped)):
            found.add(entry.group(1))
    for paragraph in text.split("\n\n"):
        if "keymap" in paragraph.lower():
            for code in CODE.findall(paragraph):
                if entry := KEYMAP_ENTRY.match(code):
                    found.add(entry.group(1))
    return found


def test_mentioned_binding_ids_finds_ids_in_tables_and_keymap_examples() -> None:
    text = (
        "| Where | Keys | Binding id |\n| --- | --- | --- |\n| Run | `r` | `start_run` |\n"
        '| History | `s` | `history.*` |\n\nRebind in `[keymap]`: `strat_run = "f5"`.\n'
        '```toml\n[keymap]\nnext_plan = "n"\n[other]\ntheme = "nord"\n```\n'
    )
    assert mentioned_binding_ids(text) == {"start_run", "history.*", "strat_run", "next_plan"}


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_every_binding_id_the_docs_name_exists(page: Path) -> None:
    unknown = sorted(mentioned_binding_ids(page.read_text(encoding="utf-8")) - binding_ids())
    assert not unknown, f"{page.name} names binding ids etu does not have: {unknown}"
