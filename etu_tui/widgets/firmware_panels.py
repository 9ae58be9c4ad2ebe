"""The Memory and Fit tabs as panels. The Memory panel owns the firmware: which ELF is
shown (the workspace's or one picked with ``e``), its worker and its result; it posts
:class:`FirmwareShown` after each change, and the App hands that to the Fit panel, which
only shows it. ``e`` on the Fit tab asks the owner with :class:`PickElfAsked`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message

from etu.parsers.errors import describe_error
from etu.parsers.program_facts import ProgramFacts, program_target
from etu.runner.workspace import FirmwareResult, VelaResult, Workspace, load_firmware
from etu.tui.keys import bindings
from etu.tui.widgets.first_shown import FirstShown
from etu.tui.widgets.fit import FitChecks, FitHeadline
from etu.tui.widgets.formatting import short_path
from etu.tui.widgets.memory import (
    FirmwareError,
    KernelsView,
    MemoryWarnings,
    PickElfScreen,
    PoolGauges,
    RegionBars,
    SectionsTable,
    SymbolsTable,
    pools_height,
)


@dataclass
class FirmwareLoaded(Message):
    """The firmware worker read an ELF's map and checked the program (or failed)."""

    result: FirmwareResult


@dataclass
class FirmwareShown(Message):
    """The Memory panel shows a new firmware state: ``line`` is the error to show (a bad
    pick or an unreadable ELF), ``hint`` what is still shown."""

    result: FirmwareResult | None
    line: str | None
    hint: str
    workspace: str


@dataclass
class FirmwarePicked(Message):
    """The user picked the program's firmware ELF (Run tab ``e``): the Boards tab takes it
    too, so what runs and what is flashed is the same file."""

    elf: Path


@dataclass
class PickElfAsked(Message):
    """``e`` on the Fit tab: the firmware's owner (the Memory panel) asks for the ELF."""


class MemoryPanel(Vertical):
    """Regions, runner pools, kernels, sections, symbols and warnings of the firmware."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("memory")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.firmware: FirmwareResult | None = None  # the shown firmware (or why it is not)
        self.pick: Path | None = None  # an ELF picked with e; else the workspace's
        self.pick_error: str | None = None  # a picked ELF that failed; the last one stays
        self.pending = False  # a firmware worker is reading
        self._request = 0  # increases per read; stale results are dropped
        self.facts: ProgramFacts | None = None
        self.workspace: Workspace | None = None
        self.vela: VelaResult | None = None

    def compose(self) -> ComposeResult:
        yield FirmwareError(id="memory-error")
        yield RegionBars(id="regions")
        with Horizontal(id="memory-pools"):
            yield PoolGauges(id="pools")
            yield KernelsView(id="kernels")
        with Horizontal(id="memory-tables"):
            yield SectionsTable(id="sections")
            yield SymbolsTable(id="symbols")
        yield MemoryWarnings(id="memory-warnings")

    def focus_main(self) -> None:
        self.query_one(SectionsTable).focus()

    # -- reading -----------------------------------------------------------------------

    def set_program(
        self, facts: ProgramFacts, workspace: Workspace, vela: VelaResult | None
    ) -> None:
        """A program opened: read the picked ELF (else the program's firmware by the
        workspace's rule, :func:`etu.runner.workspace.find_firmware`) and check it."""
        self.facts, self.workspace, self.vela = facts, workspace, vela
        self.read(self.pick)

    def read(self, elf: Path | None = None) -> None:
        """Read ``elf`` (else the workspace's firmware) in a thread; the result arrives as
        a FirmwareLoaded message."""
        if self.facts is None or self.workspace is None:
            return
        self._request += 1
        self.pending = True
        self._read(self.facts, self.workspace, elf, self.vela, self._request)

    @work(thread=True, exclusive=True, group="firmware", exit_on_error=False)
    def _read(
        self,
        facts: ProgramFacts,
        workspace: Workspace,
        elf: Path | None,
        vela: VelaResult | None,
        request: int,
    ) -> None:
        try:
            result = load_firmware(
                elf if elf is not None else workspace.firmware_for_target(program_target(facts)),
                facts.program,
                vela.report if vela is not None else None,
                workspace=workspace.root,
                program_name=facts.name,
                vela_name=vela.label if vela is not None else None,
                picked=elf is not None,
                request=request,
            )
        except Exception as error:  # load_firmware never raises; belt and braces
            text = describe_error(error)
            result = FirmwareResult("firmware", error=text, picked=elf is not None, request=request)
        self.post_message(FirmwareLoaded(result))

    @on(FirmwareLoaded)
    def _loaded(self, message: FirmwareLoaded) -> None:
        message.stop()
        result = message.result
        if result.request != self._request:
            return  # a newer read (another program, another ELF) is under way
        self.pending = False
        kept = self.firmware
        if result.error and result.picked and kept is not None and kept.memory_map is not None:
            # A bad pick: say so above the firmware still shown, and forget the pick.
            self.pick_error = result.error
            self.pick = kept.path if kept.picked else None
        else:
            self.firmware, self.pick_error = result, None
        if result.error and result.picked:
            self.notify(result.error, title="Firmware not read", severity="error", markup=False)
        self.show()
        self.app.refresh_bindings()

    # -- keys --------------------------------------------------------------------------

    def action_pick_elf(self) -> None:
        shown = self.firmware.path if self.firmware is not None else None
        if shown is not None:
            start = short_path(shown)
        elif self.facts is not None:
            start = f"{short_path(self.facts.path.parent)}{os.sep}"
        else:
            start = ""
        self.app.push_screen(PickElfScreen(start), callback=self._chosen)

    def _chosen(self, path: Path | None) -> None:
        if path is not None:
            self.pick = path
            self.read(path)

    def dismiss_error(self) -> bool:
        if not self.pick_error:
            return False
        self.pick_error = None
        self.show()
        return True

    # -- views -------------------------------------------------------------------------

    def show(self) -> None:
        result = self.firmware
        workspace = self.facts.name if self.facts is not None else ""
        own = result.error if result is not None else None
        kept = result.label if result is not None and self.pick_error else None
        hint = f"Still showing {kept}. Press e to pick another ELF." if kept else ""
        line = self.pick_error or own
        self.query_one("#memory-error", FirmwareError).show_error("Firmware not read", line, hint)
        self.query_one(RegionBars).show(result, workspace)
        self.query_one(PoolGauges).show(result)
        self.query_one(KernelsView).show(result)
        self.query_one("#memory-pools").styles.height = pools_height(result)
        sections = self.query_one(SectionsTable)
        sections.show(result)
        sections.border_title = f"Sections ({sections.row_count})"
        symbols = self.query_one(SymbolsTable)
        symbols.show(result)
        symbols.border_title = f"Largest symbols ({symbols.row_count})"
        self.query_one(MemoryWarnings).show(result)
        self.post_message(FirmwareShown(result, line, hint, workspace))


class FitPanel(FirstShown, Vertical):
    """The fit of the program on the firmware the Memory panel holds (composed when its tab
    is first shown: its checks are ~40 widgets a start need not style)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("fit")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rebuild: str | None = None  # the runner rebuild command, ready to copy
        self.io_notes: list[str] = []  # the program's integer IO (the App sets them)
        self.firmware_shown: FirmwareShown | None = None  # the last, kept until shown

    def compose_shown(self) -> ComposeResult:
        yield FirmwareError(id="fit-error")
        yield FitHeadline(id="fit-headline")
        yield FitChecks(id="fit-checks")

    @property
    def result(self) -> FirmwareResult | None:
        """The firmware whose fit is shown (or kept until the tab is)."""
        return self.firmware_shown.result if self.firmware_shown is not None else None

    async def on_shown(self) -> None:
        if self.firmware_shown is not None:
            await self._fill(self.firmware_shown)

    def focus_main(self) -> None:
        if self.shown:
            self.query_one(FitChecks).focus()

    async def show_fit(self, shown: FirmwareShown, rebuild: str | None) -> None:
        self.rebuild = rebuild
        self.firmware_shown = shown
        if self.shown:
            await self._fill(shown)

    async def _fill(self, shown: FirmwareShown) -> None:
        result, rebuild = shown.result, self.rebuild
        fit_line = shown.line or (result.fit_error if result is not None else None)
        title = "Firmware not read" if shown.line else "Fit not checked"
        self.query_one("#fit-error", FirmwareError).show_error(title, fit_line, shown.hint)
        self.query_one(FitHeadline).show(result, shown.workspace, rebuild, self.io_notes)
        await self.query_one(FitChecks).show(result)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "copy_rebuild":  # off the footer unless the firmware's build wrote one
            return bool(self.rebuild)
        return True

    def action_pick_elf(self) -> None:
        self.post_message(PickElfAsked())

    def action_copy_rebuild(self) -> None:
        if self.rebuild:
            self.app.copy_to_clipboard(self.rebuild)
            self.notify("Copied the runner rebuild command.", markup=False)
