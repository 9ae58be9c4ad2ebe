"""Pilot tests of the Memory and Fit tabs on real firmware ELFs linked by GNU ld.

Nothing is mocked: the app finds the demo's ``firmware/`` ELF (or reads the one picked with
``e``) through its worker, and the expected numbers come from
:func:`etu.parsers.memory_map.load_memory_map` and :func:`etu.parsers.fit.check_fit` on the same
files. The firmware that does not fit is linked here by :func:`build_stub_firmware`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.message import Message
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import Input, TabbedContent

from etu.parsers.elf_map import read_elf
from etu.parsers.errors import ParseError
from etu.parsers.fit import FAIL, OK, TEMP_POOL_FLAG, check_fit
from etu.parsers.memory_map import load_memory_map
from etu.parsers.pte import open_program
from etu.parsers.vela import load_vela_report
from etu.tui.app import FIT_TAB, MEMORY_TAB, NPU_TAB, PROGRAM_TAB, EtuApp
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets import (
    ErrorPanel,
    FirmwareError,
    FitChecks,
    FitHeadline,
    InstructionsTable,
    PickElfScreen,
    PoolGauges,
    RegionBars,
    SectionsTable,
    SymbolsTable,
)
from etu.tui.widgets.formatting import nbytes
from tests.console_helpers import SIZE, palette_search, screen_text, show_tab
from tools.screenshots import COMPARE_REPORT, settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
FIRMWARE = DEMO.parent / "firmware"
DEMO_ELF = FIRMWARE / "arm_executor_runner.elf"
DEMO_MAP = FIRMWARE / "arm_executor_runner.map"
DEMO_LD = FIRMWARE / "arm_executor_runner.ld"
DEMO_OPS = [
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
]
SMALL_TEMP_POOL = 1024  # far below the demo's Ethos-U scratch


@pytest.fixture(scope="module")
def small_scratch_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo program linked into a runner whose temp pool cannot hold its scratch."""
    from etu.runner.firmware import build_stub_firmware

    out = tmp_path_factory.mktemp("small_scratch")
    return build_stub_firmware(DEMO, out, ops=DEMO_OPS, temp_pool=SMALL_TEMP_POOL).elf


def _notes(into: list[str]):
    def hook(message: Message) -> None:
        if isinstance(message, Notify):
            into.append(message.notification.message)

    return hook


async def _tab(pilot: Pilot, key: str) -> None:
    await settle(pilot)
    await show_tab(pilot, key, {"m": MEMORY_TAB, "f": FIT_TAB, "n": NPU_TAB}[key])


async def _pick(pilot: Pilot, path: Path) -> None:
    await pilot.press("e")
    await pilot.pause()
    app = pilot.app
    assert isinstance(app.screen, PickElfScreen)
    app.screen.query_one("#path", Input).value = str(path)
    await pilot.press("enter")
    await settle(pilot)


def _fit_label(app: EtuApp) -> str:
    return app.query_one(TabbedContent).get_tab(FIT_TAB).label.plain


def _demo_verdicts(elf: Path = DEMO_ELF, map_path: Path | None = DEMO_MAP):
    memory_map = load_memory_map(elf, map_path=map_path)
    with open_program(DEMO) as program:
        return check_fit(program, memory_map, load_vela_report(DEMO.parent / "vela"))


# ------------------------------------------------------------------------ Memory tab


async def test_memory_tab_shows_the_demo_sram_use_and_the_runner_pools() -> None:
    expected = load_memory_map(DEMO_ELF, map_path=DEMO_MAP)
    sram = expected.region_named("SRAM")
    assert sram is not None and sram.used > 0
    assert expected.regions_from == "ld_map"
    assert set(expected.pools) >= {"model_pte", "method_allocator", "temp_allocator"}
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "m")
        assert app.query_one(TabbedContent).active == MEMORY_TAB
        assert app.focused is app.query_one(SectionsTable)
        bars = app.query_one(RegionBars)
        assert [(r.name, r.used, r.length) for r in bars.regions] == [
            (r.name, r.used, r.length) for r in expected.regions
        ]
        sram_line = next(line for line in bars.lines if line.startswith("SRAM"))
        assert f"{sram.used:,} / {sram.length:,} B" in sram_line
        assert f"{sram.percent:.1f}%" in sram_line
        title = str(bars.border_title)
        assert "firmware/arm_executor_runner.elf" in title
        assert "from ld map arm_executor_runner.map" in title
        text = screen_text(app)
        assert f"{sram.used:,} / {sram.length:,} B" in text
        pools = app.query_one(PoolGauges)
        assert [p.role for p in pools.pools] == list(expected.pools)
        for pool in expected.pools.values():
            line = next(line for line in pools.lines if line.startswith(pool.role))
            assert pool.symbol and pool.symbol in line
            assert nbytes(pool.size) in line and f" {pool.region} " in line
            assert pool.role in text and nbytes(pool.size) in text
        for name in expected.kernels.names:
            assert name in text
        assert app.query_one(SectionsTable).row_count == len(
            [s for s in expected.sections if s.size]
        )
        symbols = app.query_one(SymbolsTable)
        assert symbols.symbols[0].name == expected.symbols_top(1)[0].name
        assert str(ROOT) not in text, "views name files relative to the workspace"


async def test_firmware_beside_the_program_with_only_a_linker_script(tmp_path: Path) -> None:
    """No firmware/ folder, no map: the .ld beside the ELF gives the regions."""
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    shutil.copyfile(DEMO_ELF, tmp_path / "runner.elf")
    shutil.copyfile(DEMO_LD, tmp_path / "runner.ld")
    expected = load_memory_map(tmp_path / "runner.elf", script_path=tmp_path / "runner.ld")
    assert expected.regions_from == "linker_script"
    sram = expected.region_named("SRAM")
    assert sram is not None
    app = EtuApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "m")
        bars = app.query_one(RegionBars)
        assert "runner.elf · from linker script runner.ld" in str(bars.border_title)
        assert [(r.name, r.used) for r in bars.regions] == [
            (r.name, r.used) for r in expected.regions
        ]
        assert f"{sram.used:,} / {sram.length:,} B" in screen_text(app)


async def test_bare_elf_falls_back_to_a_preset_layout(tmp_path: Path) -> None:
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    (tmp_path / "firmware").mkdir()
    shutil.copyfile(DEMO_ELF, tmp_path / "firmware" / "runner.elf")
    app = EtuApp(tmp_path / DEMO.name)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "m")
        bars = app.query_one(RegionBars)
        assert "corstone-300" in str(bars.border_title)
        assert bars.regions, "a preset names the regions when no map or script is beside"
        assert _fit_label(app) in ("Fit ✓", "Fit !", "Fit ✗")


async def test_workspace_without_firmware_says_how_to_pick_one(tmp_path: Path) -> None:
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    app = EtuApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "m")
        assert app.load_state == "ready"
        text = screen_text(app)
        assert f"No firmware ELF beside {DEMO.name}" in text
        assert not app.query_one("#memory-error", FirmwareError).has_class("-shown")
        assert _fit_label(app) == "Fit –"
        await show_tab(pilot, "f", FIT_TAB)
        assert "not checked" in screen_text(app)


# ------------------------------------------------------------------------ Fit tab


async def test_fit_tab_on_the_demo_is_all_ok() -> None:
    expected = _demo_verdicts()
    assert expected and all(v.status == OK for v in expected)
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "f")
        assert app.query_one(TabbedContent).active == FIT_TAB
        checks = app.query_one(FitChecks)
        assert checks.verdicts == expected
        assert _fit_label(app) == "Fit ✓"
        headline = app.query_one(FitHeadline).render()
        assert str(headline).startswith("✓ FITS demo_cnn.pte on firmware/arm_executor_runner.elf")
        text = screen_text(app)
        assert f"0 failing · 0 warnings · {len(expected)} ok · with vela/" in text
        for verdict in expected:
            assert verdict.check in text
        assert "FAIL" not in text and "WARN" not in text
        assert text.count("✓ ok") >= len(expected) - 1  # the last may scroll out of view
        scratch = next(v for v in expected if v.check == "ethosu_scratch")
        assert f"need {nbytes(scratch.need)}  have {nbytes(scratch.have)}" in text


async def test_picked_firmware_too_small_fails_the_scratch_check_first(
    small_scratch_elf: Path,
) -> None:
    expected = _demo_verdicts(small_scratch_elf, small_scratch_elf.with_suffix(".map"))
    assert expected[0].check == "ethosu_scratch" and expected[0].status == FAIL
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "f")
        assert _fit_label(app) == "Fit ✓"
        await _pick(pilot, small_scratch_elf)
        assert app.query_one(TabbedContent).active == FIT_TAB  # picking stays on the tab
        checks = app.query_one(FitChecks)
        assert checks.verdicts == expected
        first = checks.verdicts[0]
        assert (first.check, first.status) == ("ethosu_scratch", FAIL)
        assert first.fix is not None and TEMP_POOL_FLAG in first.fix
        row = checks.row_texts()[0]
        assert row.startswith("✗ FAIL ethosu_scratch")
        assert f"need {nbytes(first.need)}  have {nbytes(SMALL_TEMP_POOL)}" in row
        assert f"fix  {first.fix}" in row
        assert _fit_label(app) == "Fit ✗"
        text = screen_text(app)
        assert "✗ DOES NOT FIT demo_cnn.pte on arm_executor_runner.elf" in text
        lines = text.splitlines()
        fail_at = next(i for i, line in enumerate(lines) if "✗ FAIL" in line)
        assert "ethosu_scratch" in lines[fail_at]
        assert all("✓ ok" not in line for line in lines[:fail_at]), "failing checks first"
        assert TEMP_POOL_FLAG in text.replace("│", "").replace("\n", "").replace(" ", "")
        assert str(small_scratch_elf.parent) not in text
        # The Memory tab follows the picked ELF: its temp pool is what SRAM holds.
        await pilot.press("m")
        await pilot.pause()
        sram = app.query_one(RegionBars).regions
        expected_sram = load_memory_map(
            small_scratch_elf, map_path=small_scratch_elf.with_suffix(".map")
        ).region_named("SRAM")
        assert expected_sram is not None
        assert [r.used for r in sram if r.name == "SRAM"] == [expected_sram.used]


async def test_non_elf_picked_shows_one_line_and_keeps_the_firmware(tmp_path: Path) -> None:
    bad = tmp_path / "notes.elf"
    bad.write_text("Not firmware: a build log saved with the wrong extension.\n")
    with pytest.raises(ParseError) as raised:
        read_elf(bad)
    expected = f"notes.elf: {raised.value.detail}"
    assert "\n" not in expected
    sram = load_memory_map(DEMO_ELF, map_path=DEMO_MAP).region_named("SRAM")
    assert sram is not None
    notes: list[str] = []
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE, message_hook=_notes(notes)) as pilot:
        await _tab(pilot, "m")
        await _pick(pilot, bad)
        assert app.is_running
        error = app.query_one("#memory-error", FirmwareError)
        assert error.has_class("-shown")
        text = screen_text(app)
        assert expected in text
        assert "Still showing firmware/arm_executor_runner.elf" in text
        assert "Traceback" not in text and str(tmp_path) not in text
        assert any(expected in note for note in notes)
        assert not app.query_one(ErrorPanel).has_class("-shown"), "only these tabs say so"
        # The last good firmware stays shown and checked.
        assert f"{sram.used:,} / {sram.length:,} B" in text
        assert _fit_label(app) == "Fit ✓"
        await show_tab(pilot, "f", FIT_TAB)
        assert expected in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not error.has_class("-shown")
        await pilot.press("o")  # still responsive
        await pilot.pause()
        assert isinstance(app.screen, OpenFileScreen)


async def test_corrupt_workspace_firmware_errors_stay_in_their_tabs(tmp_path: Path) -> None:
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    (tmp_path / "firmware").mkdir()
    elf = tmp_path / "firmware" / "runner.elf"
    elf.write_bytes(DEMO_ELF.read_bytes()[:40])  # cut inside the ELF header
    with pytest.raises(ParseError) as raised:
        read_elf(elf)
    expected = f"firmware/runner.elf: {raised.value.detail}"
    app = EtuApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_state == "ready"
        assert app.query_one(InstructionsTable).row_count == 3  # the program is unaffected
        assert not app.query_one(ErrorPanel).has_class("-shown")
        for key, tab in (("m", "#memory-error"), ("f", "#fit-error")):
            await pilot.press(key)
            await pilot.pause()
            assert app.query_one(tab, FirmwareError).has_class("-shown")
            text = screen_text(app)
            assert expected in text and str(tmp_path) not in text
        assert _fit_label(app) == "Fit –"


# ------------------------------------------------------------------------ keys


async def test_pick_key_is_in_the_footer_of_memory_and_fit_only() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "e Pick ELF" not in screen_text(app).splitlines()[-1]
        await pilot.press("e")  # not a key of the Program tab
        await pilot.pause()
        assert not isinstance(app.screen, PickElfScreen)
        for key, tab in (("m", MEMORY_TAB), ("f", FIT_TAB)):
            await show_tab(pilot, key, tab)
            footer = screen_text(app).splitlines()[-1]
            assert "e Pick ELF" in footer and "itdnmfukjB Tabs" in footer


async def test_npu_footer_still_holds_every_key_at_140_columns() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "n")
        app.npu_panel.add_report(COMPARE_REPORT)  # two reports: r is enabled
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        for shown in ("? Help", "itdnmfukjB Tabs", "s Sort", "r Next", "x Drop", "q Quit"):
            assert shown in footer
        assert app.query_one(TabbedContent).active == NPU_TAB


async def test_palette_picks_an_elf_from_the_program_tab(small_scratch_elf: Path) -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one(TabbedContent).active == PROGRAM_TAB
        await palette_search(pilot, "pick another elf", "Firmware: pick another ELF…")
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == MEMORY_TAB
        assert isinstance(app.screen, PickElfScreen)
        app.screen.query_one("#path", Input).value = str(small_scratch_elf)
        await pilot.press("enter")
        await settle(pilot)
        assert _fit_label(app) == "Fit ✗"
        assert (
            app.memory_panel.firmware is not None
            and app.memory_panel.firmware.label == small_scratch_elf.name
        )


async def test_picked_firmware_stays_for_the_next_program(
    tmp_path: Path, small_scratch_elf: Path
) -> None:
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "f")
        await _pick(pilot, small_scratch_elf)
        assert _fit_label(app) == "Fit ✗"
        app.open_target(tmp_path)
        await settle(pilot)
        assert (
            app.memory_panel.firmware is not None
            and app.memory_panel.firmware.path == small_scratch_elf
        )
        assert app.query_one(FitChecks).verdicts[0].check == "ethosu_scratch"
        assert _fit_label(app) == "Fit ✗"


async def test_fit_copies_the_rebuild_command_a_firmware_build_wrote(tmp_path: Path) -> None:
    """`b` copies what rebuilds the shown firmware (the rebuild.sh a firmware build wrote
    beside the ELF); without one the key is not offered. It never fired before: the console
    asked runner.firmware for a function that did not exist."""
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    (tmp_path / "firmware").mkdir()
    for source in (DEMO_ELF, DEMO_MAP, DEMO_LD):
        shutil.copyfile(source, tmp_path / "firmware" / source.name)
    app = EtuApp(tmp_path / DEMO.name)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "f")
        assert not app.query_one("FitPanel").check_action("copy_rebuild", ())
        assert "Copy rebuild" not in screen_text(app).splitlines()[-1]  # not offered
    (tmp_path / "firmware" / "rebuild.sh").write_text(
        "#!/bin/sh\n# a comment\nset -e\ncmake -S src -B out -DET_PTE_FILE_PATH=demo.pte\n"
        "cmake --build out\n"
    )
    app = EtuApp(tmp_path / DEMO.name)
    async with app.run_test(size=SIZE) as pilot:
        await _tab(pilot, "f")
        assert "b Copy rebuild" in screen_text(app).splitlines()[-1]
        await pilot.press("b")
        await pilot.pause()
        assert app.clipboard == (
            "cmake -S src -B out -DET_PTE_FILE_PATH=demo.pte\ncmake --build out"
        )
