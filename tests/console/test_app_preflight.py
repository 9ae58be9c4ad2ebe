"""The pre-flight before a Run tab run and a Boards flash flags each fit problem that would
make the firmware fail (#24 §3), not only another program baked in: a kernel the program
needs that the firmware lacks, a method pool or temp pool too small, a memory region that
overflows. Each on a real firmware linked here (runner.firmware.build_stub_firmware, as
tools/screenshots links the Fit view's), at a laptop terminal and at 120×36: the dialog
names the problem on screen, and cancelling starts nothing.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from etu.parsers.program_facts import select_ops_list
from etu.parsers.pte import open_program
from etu.runner.firmware import FIRMWARE_SOURCES, build_stub_firmware
from etu.tui.app import EtuApp
from etu.tui.screens.preflight import PreflightScreen
from tests.console_helpers import open_run_tab, screen_text, wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
SIZES = {"80x24": (80, 24), "120x36": (120, 36)}
MIB = 1024 * 1024
PRESET_SRAM = "SRAM (rw)  : ORIGIN = 0x31000000, LENGTH = 0x00200000"  # corstone300.ld

# firmware variant → what its pre-flight problem says (a phrase of the fit check's message)
PROBLEMS = {
    "missing_kernel": "not in the firmware: quantized_decomposed::quantize_per_tensor.out",
    "small_method_pool": "method pool 4,096 B",
    "small_temp_pool": "the temp pool has 1,024 B",
    "region_overflow": "SRAM overflows by 1,048,576 bytes",
}


def _demo_ops() -> list[str]:
    with open_program(DEMO) as program:
        return [op for op in select_ops_list(program).split(",") if op]


def _link(variant: str, folder: Path) -> Path:
    """The demo program baked into a stub runner with one thing wrong; the folder."""
    ops = _demo_ops()
    if variant == "missing_kernel":  # dequantize only: quantize_per_tensor is missing
        build_stub_firmware(DEMO, folder, ops=[op for op in ops if "dequantize" in op])
    elif variant == "small_method_pool":
        build_stub_firmware(DEMO, folder, ops=ops, method_pool=4096)
    elif variant == "small_temp_pool":
        build_stub_firmware(DEMO, folder, ops=ops, temp_pool=1024)
    else:  # linked for a 4 MiB SRAM, 3 MiB of it the temp pool, then copied without its
        # .map and .ld: the ELF alone is read against the runner's Corstone-300 layout,
        # whose SRAM is 2 MiB
        folder.mkdir(parents=True)
        script = folder.parent / f"{variant}.ld"
        text = (FIRMWARE_SOURCES / "corstone300.ld").read_text("utf-8")
        assert PRESET_SRAM in text
        script.write_text(text.replace(PRESET_SRAM, PRESET_SRAM.replace("00200000", "00400000")))
        elf = build_stub_firmware(
            DEMO, folder, ops=ops, temp_pool=3 * MIB, linker_script=script
        ).elf
        for suffix in (".map", ".ld"):
            elf.with_suffix(suffix).unlink()
    (folder / "rebuild.sh").unlink(missing_ok=True)
    return folder


@pytest.fixture(scope="module")
def firmware_variants(tmp_path_factory: pytest.TempPathFactory):
    """Links each variant once per module, when first asked for."""
    root = tmp_path_factory.mktemp("preflight_firmware")
    linked: dict[str, Path] = {}

    def get(variant: str) -> Path:
        if variant not in linked:
            linked[variant] = _link(variant, root / variant)
        return linked[variant]

    return get


def _install(workspace: Path, firmware: Path) -> None:
    """The variant replaces the workspace's firmware folder."""
    shutil.rmtree(workspace / "firmware")
    shutil.copytree(firmware, workspace / "firmware")


def _dialog_says(app: EtuApp, phrase: str) -> bool:
    """The phrase is on screen, read across the dialog's wrapped lines."""
    text = re.sub(r"[│┃║]", " ", screen_text(app))
    return phrase in " ".join(text.split())


@pytest.fixture
def no_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    """No serial port attached (the machine's own would change the Boards tab)."""
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: [])


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize("variant", PROBLEMS)
async def test_run_and_flash_preflights_flag_the_firmware(
    variant: str, size, workspace: Path, standin: Path, no_ports: None, firmware_variants
) -> None:
    """One app: the Run tab's run (the FVP stand-in), then the Boards tab's flash to the
    emulated board (its default), of the same firmware; each asks first, naming the
    problem, and cancelling starts and flashes nothing."""
    from etu.tui.widgets.boards import BoardsPanel

    phrase = PROBLEMS[variant]
    _install(workspace, firmware_variants(variant))
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        run = await open_run_tab(pilot)
        await wait_until(pilot, lambda: run.elf is not None, what="the firmware")
        await settle(pilot)
        problems = run.preflight()
        assert any(phrase in problem for problem in problems), problems
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PreflightScreen))
        await pilot.pause()
        assert _dialog_says(app, phrase), screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert run.live is None, "cancel starts nothing"

        await pilot.press("B")
        await settle(pilot)
        boards = app.query_one(BoardsPanel)
        assert boards.firmware == workspace / "firmware" / "arm_executor_runner.elf"
        await pilot.press("r")
        await wait_until(
            pilot, lambda: isinstance(app.screen, PreflightScreen), what="the pre-flight"
        )
        await pilot.pause()
        problems = app.screen.problems
        assert any(phrase in problem for problem in problems), problems
        assert _dialog_says(app, phrase), screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not boards.flashing, what="the cancel")
        assert "flash cancelled" in boards.last_status
        assert run.live is None, "nothing was flashed or monitored"
