"""The README front page and docs/ stay true to the code: every command has a section in
docs/cli.md that names each of its flags, its ``--help`` runs, every relative link and anchor
resolves, every key the pages show (``<kbd>…</kbd>``) and every keymap example names a binding
in etu.tui.keys.KEYS, and the screenshot tool is not part of the installed package."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

from etu.tui.cli import COMMAND_MODULES, CommandParser, command_module, main
from etu.tui.keys import KEYS

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CLI_PAGE = DOCS / "cli.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
FRONT_PAGE_LINES = 150

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`]*`")
KBD = re.compile(r"<kbd>([^<]+)</kbd>")
KEYMAP_EXAMPLE = re.compile(r"`([a-z_][a-z0-9_.]*) = \"[^\"]+\"`")

# How a page writes a key, as Textual names it.
KEY_NAMES = {
    "?": "question_mark", "/": "slash", "]": "right_square_bracket", "[": "left_square_bracket",
    "Escape": "escape", "Tab": "tab", "Enter": "enter", "Home": "home", "End": "end",
    "Page Up": "pageup", "Page Down": "pagedown", "F1": "f1", "space": "space",
}  # fmt: skip
# Keys the pages name that are Textual's own, not actions of the KEYS table.
NOT_ACTIONS = {"ctrl+p": "Textual's command palette"}


def prose_lines(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered from 1."""
    lines, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, markup and punctuation dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for _, line in prose_lines(page):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def sections(page: Path, level: int) -> dict[str, str]:
    """Heading text -> the text under it, up to the next heading of ``level`` or above."""
    result: dict[str, str] = {}
    current: str | None = None
    for _, line in prose_lines(page):
        match = HEADING.match(line)
        if match and len(match.group(1)) <= level:
            current = match.group(2) if len(match.group(1)) == level else None
            if current is not None:
                result[current] = ""
            continue
        if current is not None:
            result[current] += line + "\n"
    return result


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser ``etu NAME`` parses with."""
    parser = CommandParser(prog=f"etu {name}", description=command_module(name).HELP)
    command_module(name).configure(parser)
    return parser


def long_options(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, list[str]]:
    """Subcommand path (``""``, ``"build"``) -> its flags and positional choices."""
    found: dict[str, list[str]] = {prefix: []}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found.update(long_options(sub, f"{prefix} {sub_name}".strip()))
        elif action.option_strings:
            found[prefix] += [o for o in action.option_strings if o.startswith("--")]
        elif action.choices:
            found[prefix] += [str(choice) for choice in action.choices]
    for name in found:
        found[name] = [option for option in found[name] if option != "--help"]
    return found


def key_owners(spec) -> tuple[str, ...]:
    return tuple(getattr(spec, "owners", None) or (spec.owner,))


def bound_keys() -> dict[str, set[str]]:
    """Owner (``app`` or a panel) -> every key bound there in KEYS."""
    keys: dict[str, set[str]] = {}
    for spec in KEYS:
        for owner in key_owners(spec):
            keys.setdefault(owner, set()).update(spec.key.split(","))
    return keys


def panel_of(heading: str) -> str | None:
    """The panel a heading is about ("Run tab", "The History tab"), if exactly one."""
    from etu.tui.keys import PANELS

    titles = {title: owner for owner, title in PANELS.items() if owner != "app"}
    named = {titles[word] for word in re.findall(r"(\w+) tabs?\b", heading) if word in titles}
    return named.pop() if len(named) == 1 else None


# -- commands ------------------------------------------------------------------------------


def test_every_command_has_a_section_with_its_exit_status() -> None:
    documented = sections(CLI_PAGE, 2)
    for name in COMMAND_MODULES:
        assert f"etu {name}" in documented, f"docs/cli.md: no '## etu {name}' section"
        assert "Exit status" in documented[f"etu {name}"], f"docs/cli.md: etu {name}: no status"


@pytest.mark.parametrize("name", list(COMMAND_MODULES))
def test_every_flag_of_a_command_is_in_its_section(name: str) -> None:
    text = sections(CLI_PAGE, 2)[f"etu {name}"]
    for sub, options in long_options(command_parser(name)).items():
        if sub:
            assert f"etu {name} {sub}" in text, f"docs/cli.md: etu {name} {sub} not described"
        missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)]
        assert not missing, f"docs/cli.md: etu {name} {sub}: {missing} not documented"


@pytest.mark.parametrize("argv", [[name] for name in COMMAND_MODULES] + [["firmware", "build"]])
def test_every_command_help_runs(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: etu {' '.join(argv)}")


# -- links ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for number, line in prose_lines(page):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}:{number}: {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.name}:{number}: {target}: no such heading")
    assert not broken


def test_the_front_page_links_every_docs_page() -> None:
    linked = {Path(target.partition("#")[0]).name for _, line in prose_lines(README)
              for target in LINK.findall(line) if target.startswith("docs/")}  # fmt: skip
    assert {page.name for page in DOCS.glob("*.md")} <= linked


def test_the_front_page_is_short_and_keeps_its_promises() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= FRONT_PAGE_LINES
    assert "make run" in text and "make test" in text
    assert "stand-in FVP" in text and "simulated" in text  # the stand-in is named honestly
    pictures = re.findall(r"!\[[^\]]*\]\((screenshots/[^)]+\.svg)\)", text)
    assert len(pictures) == 1 and (ROOT / pictures[0]).is_file()


# -- keys ----------------------------------------------------------------------------------


def test_the_key_table_markers_are_kept() -> None:
    text = (DOCS / "console.md").read_text(encoding="utf-8")
    assert text.count("<!-- keys:begin -->") == 1 and text.count("<!-- keys:end -->") == 1
    assert text.index("<!-- keys:begin -->") < text.index("<!-- keys:end -->")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_key_a_page_shows_is_bound(page: Path) -> None:
    """A key under a tab's heading is that tab's, or works everywhere, or is a widget's or
    dialog's own (the log, tables, the pre-flight dialog); elsewhere it is bound somewhere."""
    from etu.tui.keys import PANELS

    keys = bound_keys()
    everywhere = set().union(*keys.values())
    shared = set().union(*(bound for owner, bound in keys.items() if owner not in PANELS))
    unbound, panel = [], None
    for number, line in prose_lines(page):
        heading = HEADING.match(line)
        if heading:
            panel = panel_of(heading.group(2))
            continue
        for shown in KBD.findall(line):
            key = KEY_NAMES.get(shown, shown)
            allowed = everywhere if panel is None else keys.get(panel, set()) | keys["app"] | shared
            if key not in allowed and key not in NOT_ACTIONS:
                where = f" on the {panel} tab" if panel else ""
                unbound.append(f"{page.name}:{number}: <kbd>{shown}</kbd> is not bound{where}")
    assert not unbound


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_keymap_example_names_a_binding(page: Path) -> None:
    ids = {spec.id for spec in KEYS}
    named = KEYMAP_EXAMPLE.findall(page.read_text(encoding="utf-8"))
    assert not [name for name in named if name not in ids]


def test_a_wrong_key_or_link_is_caught(tmp_path: Path) -> None:
    """The checks above can fail: `c` is the Program tab's, not the Run tab's; the page has
    no heading named so."""
    page = tmp_path / "page.md"
    page.write_text("### Run tab\n\n<kbd>c</kbd> copies.\n", encoding="utf-8")
    with pytest.raises(AssertionError):
        test_every_key_a_page_shows_is_bound(page)
    page.write_text("# Title\n\nSee [the run](page.md#running).\n", encoding="utf-8")
    with pytest.raises(AssertionError):
        test_every_relative_link_and_anchor_resolves(page)


# -- the screenshot tool ---------------------------------------------------------------------


def test_every_tab_has_a_screenshot_and_every_picture_is_the_tools() -> None:
    """Each tab of the console has a picture in screenshots/ (``make screenshots`` renders
    them at 120×36), the Run tab also at 80×24; no picture the tool no longer writes stays.
    A tab added to EtuApp.TABS without one fails here. No rendering: names only."""
    from etu.tui.app import EtuApp
    from tools.screenshots import SCREENSHOTS, SMALL_RUN, TAB_SCREENSHOTS

    folder = ROOT / "screenshots"
    assert [tab for tab, *_ in EtuApp.TABS if tab not in TAB_SCREENSHOTS] == []
    assert SMALL_RUN in SCREENSHOTS and set(TAB_SCREENSHOTS.values()) <= set(SCREENSHOTS)
    assert [name for name in SCREENSHOTS if not (folder / name).is_file()] == []
    assert sorted({path.name for path in folder.glob("*.svg")} - set(SCREENSHOTS)) == []


def test_every_screenshot_the_pages_show_exists() -> None:
    shown = {
        (page.name, name)
        for page in PAGES
        for name in re.findall(r"screenshots/([\w.-]+\.(?:svg|png))", page.read_text("utf-8"))
    }
    assert shown
    assert sorted(s for s in shown if not (ROOT / "screenshots" / s[1]).is_file()) == []


def test_the_screenshot_tool_is_not_installed() -> None:
    assert importlib.util.find_spec("etu.tui.screenshots") is None
    assert (ROOT / "tools" / "screenshots.py").is_file()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-m tools.screenshots screenshots/" in makefile
