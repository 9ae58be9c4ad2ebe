"""The console's one action table: every key, what it does, and where it shows.

The footer (through each owner's ``BINDINGS``), the command palette, the ``?`` help screen
and the user keymap all read this table, so a key is declared once. Each row names its
owner: ``app`` for keys that work everywhere, else the panel (tab) whose widget holds the
binding and its action. Every binding has an id (``KeySpec.id``): a keymap in the config
file maps ids to keys (``{"run.start": "f5"}``) through Textual's ``App.set_keymap``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

# Panels in tab order, with their titles; "app" keys work on every tab.
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

TABS = Binding.Group("Tabs", compact=True)


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One row of the table.

    ``action`` runs on the owner (the App for ``app`` keys, else the panel). ``label`` is
    the footer's word; ``title`` and ``help`` are the palette's and the help screen's.
    ``footer`` False keeps it off the footer (the help screen and palette still list it);
    ``palette`` False keeps it out of the palette (the help screen still lists it).
    """

    id: str
    key: str
    action: str
    owner: str
    label: str
    title: str
    help: str = ""
    footer: bool = True
    palette: bool = True
    group: Binding.Group | None = None


def _tab(key: str, tab: str, label: str, title: str, help: str) -> KeySpec:
    return KeySpec(tab, key, f"show_tab('{tab}')", "app", label, title, help, group=TABS)


KEYS: tuple[KeySpec, ...] = (
    # -- everywhere ------------------------------------------------------------------
    KeySpec("quit", "q", "quit", "app", "Quit", "App: quit", "Leave the console"),
    KeySpec(
        "help",
        "question_mark,f1",
        "help",
        "app",
        "Help",
        "Help: keys",
        "Every key, by panel, with the keymap's changes",
    ),
    KeySpec(
        "open_file",
        "o",
        "open_file",
        "app",
        "Open",
        "File: open .pte or workspace…",
        "Decode another program",
        footer=False,
    ),
    _tab("i", "program", "Program", "View: instructions", "Summary, instructions, CPU ops"),
    _tab("t", "tensors", "Tensors", "View: tensors and values", "Every value of the plan"),
    _tab("d", "delegates", "Delegates", "View: delegates", "Ethos-U payloads, compile specs"),
    _tab("n", "npu", "NPU", "View: NPU (Vela estimate)", "Cycles, memory, per-layer"),
    _tab(
        "m",
        "memory",
        "Memory",
        "View: firmware memory map",
        "Regions, runner pools, sections, symbols of the ELF",
    ),
    _tab(
        "f",
        "fit",
        "Fit",
        "View: fit of the program on the firmware",
        "Checks failing first, with the build flag that fixes each",
    ),
    _tab(
        "u",
        "run",
        "Run",
        "View: run on an FVP, the emulated board or a board",
        "Run the firmware, watch its log, PMU, allocators and outputs",
    ),
    _tab(
        "k",
        "compile",
        "Compile",
        "View: compile a model",
        "Compile for an Ethos-U target, sweep targets and memory modes",
    ),
    _tab(
        "j",
        "history",
        "History",
        "View: history of sessions",
        "Every recorded session of the workspace, compared, charted, replayed",
    ),
    _tab(
        "B",
        "boards",
        "Boards",
        "View: boards (ports, flash, monitor)",
        "Serial ports on hot-plug, a board profile, flash with progress, then watch it run",
    ),
    KeySpec(
        "dismiss_error",
        "escape",
        "dismiss_error",
        "app",
        "Dismiss",
        "App: dismiss the error",
        "Hide the error shown above the tabs",
        footer=False,
        palette=False,
    ),
    # -- program, tensors, delegates -------------------------------------------------
    KeySpec(
        "copy_select_ops",
        "c",
        "copy_select_ops",
        "program",
        "Copy ops",
        "Program: copy EXECUTORCH_SELECT_OPS_LIST",
        "The selective-build value for the CPU operators",
    ),
    KeySpec(
        "next_plan",
        "p",
        "next_plan",
        "program",
        "Plan",
        "Plan: next plan",
        "Cycle through the execution plans",
    ),
    KeySpec(
        "next_plan",
        "p",
        "next_plan",
        "tensors",
        "Plan",
        "Plan: next plan",
        "Cycle through the execution plans",
        palette=False,
    ),
    KeySpec(
        "next_plan",
        "p",
        "next_plan",
        "delegates",
        "Plan",
        "Plan: next plan",
        "Cycle through the execution plans",
        palette=False,
    ),
    # -- NPU ---------------------------------------------------------------------------
    KeySpec(
        "add_vela_report",
        "a",
        "add_vela_report",
        "npu",
        "Compare",
        "NPU: add a Vela report to compare…",
        "Another Vela output folder, side by side",
    ),
    KeySpec(
        "sort_layers",
        "s",
        "sort_layers",
        "npu",
        "Sort",
        "NPU: sort layers by cycles / original order",
        "Toggle the per-layer table's order",
    ),
    KeySpec(
        "next_report",
        "r",
        "next_report",
        "npu",
        "Next",
        "NPU: show the next compared report",
        "Cycle the shown Vela report",
    ),
    KeySpec(
        "drop_report",
        "x",
        "drop_report",
        "npu",
        "Drop",
        "NPU: drop the shown report from the comparison",
        "A report added with a (the program's own stays)",
    ),
    # -- firmware ----------------------------------------------------------------------
    KeySpec(
        "pick_elf",
        "e",
        "pick_elf",
        "memory",
        "Pick ELF",
        "Firmware: pick another ELF…",
        "Read its memory map and check the program against it",
    ),
    KeySpec(
        "pick_elf",
        "e",
        "pick_elf",
        "fit",
        "Pick ELF",
        "Firmware: pick another ELF…",
        "Read its memory map and check the program against it",
        palette=False,
    ),
    KeySpec(
        "copy_rebuild",
        "b",
        "copy_rebuild",
        "fit",
        "Copy rebuild",
        "Firmware: copy the runner rebuild command",
        "The build command for this program's runner (select ops, pools, target)",
    ),
    # -- run ---------------------------------------------------------------------------
    KeySpec(
        "start_run",
        "r",
        "start_run",
        "run",
        "Start",
        "Run: start the firmware on the target (an FVP or the emulated board)",
        "Checks the program, target and firmware first; recorded as a session",
    ),
    KeySpec(
        "stop_run",
        "s",
        "stop_run",
        "run",
        "Stop",
        "Run: stop the run",
        "Stops the simulator's whole process group, or a board's monitor",
    ),
    KeySpec(
        "maximize_log",
        "z",
        "maximize_log",
        "log_box",
        "Zoom",
        "Log: maximise / restore",
        "The log fills the screen (Escape restores)",
        palette=False,
    ),
    KeySpec(
        "log_find",
        "slash",
        "log_find",
        "log_box",
        "Find",
        "Log: find…",
        "Type a text; Enter finds the next line with it",
        palette=False,
    ),
    KeySpec(
        "pick_run_elf",
        "e",
        "pick_run_elf",
        "run",
        "ELF",
        "Run: pick the firmware ELF to run…",
        "Instead of the workspace's",
        footer=False,
    ),
    KeySpec(
        "log_follow",
        "l",
        "log_follow",
        "log_box",
        "Follow",
        "Log: follow on / off",
        "Keep the newest line in view",
        footer=False,
        palette=False,
    ),
    KeySpec(
        "log_hex",
        "h",
        "log_hex",
        "log_box",
        "Hex",
        "Log: hex view of the line",
        "The cursor line's bytes as received",
        footer=False,
        palette=False,
    ),
    KeySpec(
        "log_time",
        "w",
        "log_time",
        "log_box",
        "Time",
        "Log: timestamps relative / delta / absolute / off",
        "Host arrival time of each line",
        footer=False,
        palette=False,
    ),
    KeySpec(
        "log_filter",
        "ctrl+f",
        "log_filter",
        "log_box",
        "Filter",
        "Log: filter…",
        "Show only the lines with a text",
        footer=False,
        palette=False,
    ),
    KeySpec(
        "log_next",
        "right_square_bracket",
        "log_next",
        "log_box",
        "Next match",
        "Log: next match",
        "The next line with the find text",
        footer=False,
        palette=False,
    ),
    KeySpec(
        "log_prev",
        "left_square_bracket",
        "log_prev",
        "log_box",
        "Previous match",
        "Log: previous match",
        "The line before with the find text",
        footer=False,
        palette=False,
    ),
    KeySpec(
        "past_runs",
        "v",
        "past_runs",
        "run",
        "Sessions",
        "Run: past sessions of this workspace",
        "Reopen a recorded session (a run's log)",
        footer=False,
    ),
    KeySpec(
        "leave_input",
        "escape",
        "leave_input",
        "log_box",
        "Back to the log",
        "Run: back to the log",
        "From the find or filter field",
        footer=False,
        palette=False,
    ),
    # -- compile -----------------------------------------------------------------------
    KeySpec(
        "start_compile",
        "r",
        "start_compile",
        "compile",
        "Compile",
        "Compile: compile the form's model",
        "Stages, log; opens the result",
    ),
    KeySpec(
        "cancel_compile",
        "x",
        "cancel_compile",
        "compile",
        "Cancel",
        "Compile: cancel the compile",
        "Stops the compile worker",
    ),
    KeySpec(
        "open_compiled",
        "g",
        "open_compiled",
        "compile",
        "Open result",
        "Compile: open the result",
        "The compiled .pte and its Vela report",
        footer=False,
    ),
    KeySpec(
        "start_sweep",
        "w",
        "start_sweep",
        "compile",
        "Sweep",
        "Compile: sweep targets / memory modes",
        "One compile per configuration, compared in a table",
    ),
    KeySpec(
        "sort_sweep",
        "s",
        "sort_sweep",
        "compile",
        "Sort",
        "Compile: sort the sweep by cycles / order",
        "Toggle the table's order",
        footer=False,
    ),
)


def specs(owner: str) -> list[KeySpec]:
    return [spec for spec in KEYS if spec.owner == owner]


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
        )
        for spec in specs(owner)
    ]


def spec_by_id(binding_id: str) -> KeySpec | None:
    return next((spec for spec in KEYS if spec.id == binding_id), None)


def panel_bindings(panel: type) -> list[Binding]:
    """The Binding objects a panel class declares (a panel added by another part of etu
    may declare its own rather than rows here: the help screen and palette list them too)."""
    return [b for b in getattr(panel, "BINDINGS", []) if isinstance(b, Binding)]
