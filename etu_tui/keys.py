"""The console's one key table: every key, what it does, and where it shows.

The footer (through each owner's ``BINDINGS``), the command palette, the ``?`` help screen,
the user keymap, ``etu config``'s keymap check and the key table in docs/console.md all read
:data:`KEYS`, so a key is declared once. Each row names its owners: ``app`` for keys that
work everywhere, else the tabs (panels) or widgets whose class holds the binding and runs
its action. Every row has an id (:attr:`KeySpec.id`): the ``[keymap]`` table of etu.toml
maps ids to keys (``start_run = "f5"``) through Textual's ``App.set_keymap``.

``python -m etu.tui.keys --markdown`` prints the docs' key table;
``python -m etu.tui.keys --write docs/console.md`` puts it between the file's markers.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from textual.binding import Binding
from textual.keys import format_key

# Tabs in tab order, with their titles; "app" keys work on every tab.
PANELS: dict[str, str] = {
    "app": "Everywhere",
    "program": "Program",
    "tensors": "Tensors",
    "delegates": "Delegates",
    "npu": "NPU",
    "memory": "Memory",
    "fit": "Fit",
    "run": "Run",
    "compile": "Compile",
    "history": "History",
    "boards": "Boards",
}
# Owners that are not tabs: widgets and dialogs with keys of their own (no palette entry).
WIDGETS: dict[str, str] = {
    "table": "Tables",
    "log": "Run log",
    "log_box": "Run log box (find, filter, time, hex)",
    "send_box": "Run send box (a line to the board)",
    "open_file": "Open dialog",
    "preflight": "Pre-flight dialog",
    "layers_screen": "Layers view",
    "help_screen": "Help screen",
}
OWNERS: dict[str, str] = PANELS | WIDGETS

TABS = Binding.Group("Tabs", compact=True)


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One row of the table.

    ``action`` runs on each owner (the App for ``app`` keys). ``label`` is the footer's
    word; ``title`` and ``help`` are the palette's and the help screen's. ``footer`` False
    keeps it off the footer (the help screen and palette still list it); ``palette`` False
    keeps it out of the palette (the help screen still lists it). ``priority`` runs it
    before the focused widget's own keys (Textual's priority binding).
    """

    id: str
    key: str
    action: str
    owners: tuple[str, ...]
    label: str
    title: str
    help: str = ""
    footer: bool = True
    palette: bool = True
    group: Binding.Group | None = None
    priority: bool = False

    @property
    def owner(self) -> str:
        """The owner the palette opens to run it (the first)."""
        return self.owners[0]

    @property
    def what(self) -> str:
        """The title without its ``Area: `` prefix."""
        return self.title.split(": ", 1)[-1]


def _tab(key: str, tab: str, label: str, title: str, help: str) -> KeySpec:
    return KeySpec(tab, key, f"show_tab('{tab}')", ("app",), label, title, help, group=TABS)


def _hidden(
    id: str,
    key: str,
    action: str,
    owners: tuple[str, ...],
    label: str,
    title: str,
    help: str = "",
    *,
    footer: bool = False,
    priority: bool = False,
) -> KeySpec:
    """A key of a widget or dialog: out of the palette (and, unless ``footer``, off the
    footer); on the help screen."""
    return KeySpec(id, key, action, owners, label, title, help, footer, False, None, priority)


APP = ("app",)
PLAN_TABS = ("program", "tensors", "delegates")
FIRMWARE_TABS = ("memory", "fit")
SCROLLERS = ("table", "log")
LOG_BOX = ("log_box",)  # the Run tab's log keys: the palette lists them through the panel

KEYS: tuple[KeySpec, ...] = (
    # -- everywhere ------------------------------------------------------------------
    KeySpec("quit", "q", "quit", APP, "Quit", "App: quit", "Leave the console"),
    KeySpec("help", "question_mark,f1", "help", APP, "Help", "Help: keys",
            "Every key, by panel, with the keymap's changes"),
    KeySpec("open_file", "o", "open_file", APP, "Open", "File: open .pte or workspace…",
            "Decode another program", footer=False),
    _tab("i", "program", "Program", "View: instructions", "Summary, instructions, CPU ops"),
    _tab("t", "tensors", "Tensors", "View: tensors and values", "Every value of the plan"),
    _tab("d", "delegates", "Delegates", "View: delegates", "Ethos-U payloads, compile specs"),
    _tab("n", "npu", "NPU", "View: NPU (Vela estimate)", "Cycles, memory, per-layer"),
    _tab("m", "memory", "Memory", "View: firmware memory map",
         "Regions, runner pools, sections, symbols of the ELF"),
    _tab("f", "fit", "Fit", "View: fit of the program on the firmware",
         "Checks failing first, with the build flag that fixes each"),
    _tab("u", "run", "Run", "View: run on an FVP, the emulated board or a board",
         "Run the firmware, watch its log, PMU, allocators and outputs"),
    _tab("k", "compile", "Compile", "View: compile a model",
         "Compile for an Ethos-U target, sweep targets and memory modes"),
    _tab("j", "history", "History", "View: history of sessions",
         "Every recorded session of the workspace, compared, charted, replayed"),
    _tab("B", "boards", "Boards", "View: boards (ports, flash, monitor)",
         "Serial ports on hot-plug, a board profile, flash with progress, then watch it run"),
    KeySpec("dismiss_error", "escape", "dismiss_error", APP, "Dismiss",
            "App: dismiss the error", "Hide the error shown above the tabs",
            footer=False, palette=False),
    # -- program, tensors, delegates -------------------------------------------------
    KeySpec("copy_select_ops", "c", "copy_select_ops", ("program",), "Copy ops",
            "Program: copy EXECUTORCH_SELECT_OPS_LIST",
            "The selective-build value for the CPU operators"),
    KeySpec("next_plan", "p", "next_plan", PLAN_TABS, "Plan", "Plan: next plan",
            "Cycle through the execution plans"),
    # -- NPU ---------------------------------------------------------------------------
    KeySpec("add_vela_report", "a", "add_vela_report", ("npu",), "Compare",
            "NPU: add a Vela report to compare…", "Another Vela output folder, side by side"),
    KeySpec("sort_layers", "s", "sort_layers", ("npu",), "Sort",
            "NPU: sort layers by cycles / original order", "Toggle the per-layer table's order"),
    KeySpec("next_report", "r", "next_report", ("npu",), "Next",
            "NPU: show the next compared report", "Cycle the shown Vela report"),
    KeySpec("drop_report", "x", "drop_report", ("npu",), "Drop",
            "NPU: drop the shown report from the comparison",
            "A report added with a (the program's own stays)"),
    KeySpec("toggle_operations", "v", "toggle_operations", ("npu",), "Ops",
            "NPU: show the command streams' operations / measured cycles / Vela's per-layer table",
            "Each delegate's NPU operations, decoded from its command stream"),
    # -- firmware ----------------------------------------------------------------------
    KeySpec("pick_elf", "e", "pick_elf", FIRMWARE_TABS, "Pick ELF",
            "Firmware: pick another ELF…",
            "Read its memory map and check the program against it"),
    KeySpec("copy_rebuild", "b", "copy_rebuild", ("fit",), "Copy rebuild",
            "Firmware: copy the runner rebuild command",
            "The commands that rebuild the shown firmware (offered when its build wrote them)"),
    # -- run ---------------------------------------------------------------------------
    KeySpec("start_run", "r", "start_run", ("run",), "Start",
            "Run: start the firmware on the target (an FVP or the emulated board)",
            "Checks the program, target and firmware first; recorded as a session"),
    KeySpec("stop_run", "s", "stop_run", ("run",), "Stop", "Run: stop the run",
            "Stops the simulator's whole process group, or a board's monitor"),
    KeySpec("maximize_log", "z", "maximize_log", LOG_BOX, "Zoom", "Log: maximise / restore",
            "The log fills the screen (Escape restores)", palette=False),
    KeySpec("log_find", "slash", "log_find", LOG_BOX, "Find", "Log: find…",
            "Type a text; Enter finds the next line with it", palette=False),
    KeySpec("pick_run_elf", "e", "pick_run_elf", ("run",), "ELF",
            "Run: pick the firmware ELF to run…", "Instead of the workspace's", footer=False),
    KeySpec("log_follow", "l", "log_follow", LOG_BOX, "Follow", "Log: follow on / off",
            "Keep the newest line in view", footer=False, palette=False),
    KeySpec("log_hex", "h", "log_hex", LOG_BOX, "Hex", "Log: hex view of the line",
            "The cursor line's bytes as received", footer=False, palette=False),
    KeySpec("log_time", "w", "log_time", LOG_BOX, "Time",
            "Log: timestamps relative / delta / absolute / off",
            "Host arrival time of each line", footer=False, palette=False),
    KeySpec("log_filter", "ctrl+f", "log_filter", LOG_BOX, "Filter", "Log: filter…",
            "Show only the lines with a text", footer=False, palette=False),
    KeySpec("log_next", "right_square_bracket", "log_next", LOG_BOX, "Next match",
            "Log: next match", "The next line with the find text", footer=False, palette=False),
    KeySpec("log_prev", "left_square_bracket", "log_prev", LOG_BOX, "Previous match",
            "Log: previous match", "The line before with the find text", footer=False,
            palette=False),
    KeySpec("past_runs", "v", "zoom_pane('past')", ("run",), "Sessions",
            "Run: past sessions of this workspace", "Reopen a recorded session (a run's log)",
            footer=False),
    KeySpec("zoom_pmu", "p", "zoom_pane('pmu')", ("run",), "PMU",
            "Run: PMU pane, full screen / restore",
            "NPU cycles next to Vela's estimate, utilisation, counters",
            footer=False),
    KeySpec("zoom_allocator", "A", "zoom_pane('allocator')", ("run",), "Allocator",
            "Run: allocator pane, full screen / restore",
            "The runner's memory pools and what each phase used", footer=False),
    KeySpec("zoom_outputs", "O", "zoom_pane('outputs')", ("run",), "Outputs",
            "Run: outputs pane, full screen / restore",
            "Every output, its values and its comparison with the host", footer=False),
    _hidden("leave_input", "escape", "leave_input", LOG_BOX, "Back to the log",
            "Run: back to the log", "From the find or filter field"),
    KeySpec("send_line", "a", "focus_send", ("run",), "Send",
            "Run: type a line to the board",
            "A board session: Enter sends the line with the board's line ending"),
    KeySpec("pulse_reset", "ctrl+t", "pulse_reset", ("run",), "Reset",
            "Run: pulse the board's reset line (DTR/RTS)",
            "A board session: the profile's reset line (else DTR) inverted for 100 ms"),
    KeySpec("show_layers", "L", "show_layers", ("run",), "Layers",
            "Run: layers of the shown session's program (SQNR per layer)",
            "Each layer against the float model on the session's inputs (all ones without "
            "a session): the first below the threshold and the largest drop marked",
            footer=False),
    KeySpec("choose_inputs", "I", "choose_inputs", ("run",), "Inputs",
            "Run: choose the inputs of the next run…",
            "All ones (the fallback), a .npy/.npz file or random:SEED, bundled into the runner",
            footer=False),
    _hidden("leave_send", "escape", "leave_send", ("send_box",), "Back to the log",
            "Run: back to the log", "From the send box"),
    # -- compile -----------------------------------------------------------------------
    KeySpec("start_compile", "r", "start_compile", ("compile",), "Compile",
            "Compile: compile the form's model", "Stages, log; opens the result"),
    KeySpec("cancel_compile", "x", "cancel_compile", ("compile",), "Cancel",
            "Compile: cancel the compile", "Stops the compile worker"),
    KeySpec("open_compiled", "g", "open_compiled", ("compile",), "Open result",
            "Compile: open the result", "The compiled .pte and its Vela report", footer=False),
    KeySpec("start_sweep", "w", "start_sweep", ("compile",), "Sweep",
            "Compile: sweep targets / memory modes",
            "One compile per configuration, compared in a table"),
    KeySpec("sort_sweep", "s", "sort_sweep", ("compile",), "Sort",
            "Compile: sort the sweep by cycles / order", "Toggle the table's order",
            footer=False),
    # -- history -----------------------------------------------------------------------
    KeySpec("sort_sessions", "s", "sort", ("history",), "Sort",
            "History: sort the sessions by the next column", "Sort by the next column"),
    KeySpec("mark_session", "space", "mark", ("history",), "Mark",
            "History: mark the session for compare", "Two marked sessions are compared"),
    KeySpec("compare_sessions", "v", "compare", ("history",), "Compare",
            "History: compare the two marked sessions", "Side by side, changes marked"),
    KeySpec("next_figure", "g", "next_figure", ("history",), "Figure",
            "History: chart the next figure", "Over the sessions of one program"),
    KeySpec("replay_session", "r", "replay", ("history",), "Replay",
            "History: replay the session", "In the Run tab's panes, at once"),
    KeySpec("replay_timed", "y", "replay_timed", ("history",), "Replay timed",
            "History: replay the session at its pace",
            "In the Run tab, at the recorded pace"),
    KeySpec("refresh_sessions", "ctrl+r", "refresh", ("history",), "Refresh",
            "History: re-read the sessions", "The workspace's session folders", footer=False),
    KeySpec("next_place", "p", "next_place", ("history",), "Place",
            "History: only the next labgrid place's sessions",
            "Cycles the places sessions were held through, then every session", footer=False),
    # -- boards ------------------------------------------------------------------------
    KeySpec("flash_board", "r", "flash", ("boards",), "Flash + monitor",
            "Boards: flash the firmware, then monitor",
            "Flash, then watch the board in the Run tab"),
    KeySpec("pick_board_firmware", "e", "pick_firmware", ("boards",), "Firmware",
            "Boards: pick the firmware to flash…", "Pick the firmware file to flash"),
    KeySpec("reset_board", "ctrl+t", "pulse_reset", ("boards",), "Reset",
            "Boards: pulse the picked port's reset line (DTR/RTS)",
            "The profile's reset line (else DTR) inverted for 100 ms", footer=False),
    KeySpec("refresh_ports", "ctrl+r", "refresh_ports", ("boards",), "Refresh",
            "Boards: re-read the serial ports", "Ports are also re-read on hot-plug",
            footer=False),
    KeySpec("acquire_place", "a", "acquire_place", ("boards",), "Acquire",
            "Boards: acquire the selected labgrid place",
            "Takes labgrid's lock on it for you until released", footer=False),
    KeySpec("release_place", "x", "release_place", ("boards",), "Release",
            "Boards: release the selected labgrid place", "A place you hold", footer=False),
    KeySpec("flash_place", "p", "flash_place", ("boards",), "Flash place",
            "Boards: flash the firmware to the selected place, then monitor",
            "Through the place's serial port, the place held for the run", footer=False),
    KeySpec("monitor_place", "w", "monitor_place", ("boards",), "Monitor place",
            "Boards: monitor the selected place's serial port",
            "In the Run tab, the place held for the run", footer=False),
    # -- tables and the run log ----------------------------------------------------------
    _hidden("cursor_up", "up", "cursor(-1)", SCROLLERS, "Up", "Cursor: up a row"),
    _hidden("cursor_down", "down", "cursor(1)", SCROLLERS, "Down", "Cursor: down a row"),
    _hidden("page_up", "pageup", "page(-1)", SCROLLERS, "Page up", "Cursor: a page up"),
    _hidden("page_down", "pagedown,space", "page(1)", SCROLLERS, "Page down",
            "Cursor: a page down"),
    _hidden("first", "home", "jump(0)", ("table",), "First", "Cursor: first row"),
    _hidden("last", "end", "jump(-1)", ("table",), "Last", "Cursor: last row"),
    _hidden("first", "home", "first", ("log",), "First", "Cursor: first line"),
    _hidden("last", "end", "last", ("log",), "Last, follow", "Cursor: last line, follow",
            "Keeps the newest line in view"),
    _hidden("scroll_left", "left", "scroll_left", SCROLLERS, "Left", "Scroll: left"),
    _hidden("scroll_right", "right", "scroll_right", SCROLLERS, "Right", "Scroll: right"),
    # -- dialogs -------------------------------------------------------------------------
    _hidden("dialog_cancel", "escape", "cancel", ("open_file",), "Cancel",
            "Dialog: cancel", "Close without opening", footer=True),
    _hidden("complete_path", "tab", "complete", ("open_file",), "Complete",
            "Dialog: complete the path", "The one match, or the common start", priority=True),
    _hidden("preflight_cancel", "escape", "cancel", ("preflight",), "Cancel",
            "Pre-flight: cancel the run", footer=True),
    _hidden("preflight_run_anyway", "r", "run_anyway", ("preflight",), "Run anyway",
            "Pre-flight: run anyway", "Despite the failed checks", footer=True),
    _hidden("layers_close", "escape", "close", ("layers_screen",), "Close", "Layers: close",
            footer=True),
    _hidden("help_close", "escape,q,question_mark,f1", "close", ("help_screen",), "Close",
            "Help: close"),
)  # fmt: skip


def specs(owner: str) -> list[KeySpec]:
    """The rows ``owner`` (a key of :data:`OWNERS`) binds, in table order."""
    return [spec for spec in KEYS if owner in spec.owners]


def bindings(owner: str) -> list[Binding]:
    """The ``BINDINGS`` of ``owner``: one Binding per row, with its id for the keymap."""
    return [
        Binding(
            spec.key,
            spec.action,
            spec.label,
            show=spec.footer,
            id=spec.id,
            tooltip=spec.help,
            group=spec.group,
            priority=spec.priority,
        )
        for spec in specs(owner)
    ]


def binding_ids() -> set[str]:
    """Every id a ``[keymap]`` entry may name."""
    return {spec.id for spec in KEYS}


# -- the docs' key table -----------------------------------------------------------------

BEGIN, END = "<!-- keys:begin -->", "<!-- keys:end -->"
_NAMED_KEYS = {
    "escape": "Escape", "space": "Space", "tab": "Tab", "enter": "Enter", "pageup": "PgUp",
    "pagedown": "PgDn", "home": "Home", "end": "End", "up": "↑", "down": "↓", "left": "←",
    "right": "→",
}  # fmt: skip


def key_label(key: str) -> str:
    """One key of a row (``ctrl+f``, ``question_mark``, ``f1``) as a reader types it."""
    *modifiers, name = key.split("+")
    if name in _NAMED_KEYS:
        name = _NAMED_KEYS[name]
    elif len(name) > 1 and name[0] == "f" and name[1:].isdigit():
        name = name.upper()
    else:
        name = format_key(name)
    return "+".join([*modifiers, name])


def markdown_table() -> str:
    """The key table of docs/console.md: one line per row of :data:`KEYS`."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| Where | Keys | What (palette and help title) | Notes | Binding id |",
        "| --- | --- | --- | --- | --- |",
    ]
    for spec in KEYS:
        where = ", ".join(OWNERS[owner] for owner in spec.owners)
        keys = " ".join(f"`{key_label(key)}`" for key in spec.key.split(","))
        columns = (where, keys, spec.title, spec.help)
        lines.append("| " + " | ".join(cell(c) for c in columns) + f" | `{spec.id}` |")
    return "\n".join(lines)


def replace_block(text: str, table: str) -> str:
    """``text`` with the part between the key markers replaced by ``table``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {BEGIN} … {END} markers")
    return f"{text[: start + len(BEGIN)]}\n{table}\n{text[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m etu.tui.keys", description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print the docs' key table")
    parser.add_argument("--write", type=Path, metavar="FILE",
                        help="replace the table between FILE's key markers")  # fmt: skip
    args = parser.parse_args(argv)
    if args.write is not None:
        try:
            text = args.write.read_text(encoding="utf-8")
            args.write.write_text(replace_block(text, markdown_table()), encoding="utf-8")
        except (OSError, ValueError) as error:
            print(f"etu: {args.write}: {error}", file=sys.stderr)
            return 2
        return 0
    print(markdown_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
