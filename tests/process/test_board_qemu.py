"""The emulated board: the stand-in firmware built here boots on QEMU mps3-an547 and prints
over UART0, read through a pty exactly as a USB serial port is read."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import serial

from etu.runner.boards.qemu import QemuBoard, QemuError, qemu_argv
from etu.runner.firmware import build_stub_firmware

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_PTE = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
OPS = ["quantized_decomposed::quantize_per_tensor.out"]

needs_qemu = pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)",
)


@pytest.fixture(scope="module")
def firmware(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("qemu-fw")
    return build_stub_firmware(DEMO_PTE, out, ops=OPS, num_inferences=2).elf


def read_until_ended(board: QemuBoard, port: serial.Serial, limit: float = 20.0) -> bytes:
    data = bytearray()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        chunk = port.read(4096)
        data += chunk
        if board.guest_ended.is_set() and not chunk:
            break
    return bytes(data)


def test_argv_shape() -> None:
    argv = qemu_argv("fw.elf")
    assert argv[:3] == ["qemu-system-arm", "-M", "mps3-an547"]
    for flag in ("-nographic", "-no-reboot", "-S"):
        assert flag in argv
    assert argv[argv.index("-serial") + 1] == "pty"
    assert argv[-2:] == ["-kernel", "fw.elf"]


@needs_qemu
def test_firmware_boots_and_prints_over_uart0(firmware: Path) -> None:
    with QemuBoard(firmware) as board:
        pty = board.start()
        assert pty.startswith("/dev/pts/")
        port = serial.Serial(pty, timeout=0.1, exclusive=True)
        board.resume()
        text = read_until_ended(board, port).decode()
        port.close()
    assert board.returncode is not None
    lines = text.splitlines()
    assert lines[0].startswith("etu stand-in runner firmware")
    size = DEMO_PTE.stat().st_size
    assert f"PTE Model data loaded. Size: {size} bytes." in text
    assert "PTE @ 0x70000000 [----ET12]" in text
    assert f"Setup Method allocator pool. Size: {60 * 1024 * 1024} bytes." in text
    assert "Starting running 2 inferences..." in text
    assert "kernel stub calls: 2" in text  # one kernel, two inferences: it really ran
    assert lines[-1].endswith("Program complete, exiting.")


@needs_qemu
def test_paused_until_resumed(firmware: Path) -> None:
    with QemuBoard(firmware) as board:
        port = serial.Serial(board.start(), timeout=0.3)
        assert port.read(100) == b""  # nothing runs before resume
        board.resume()
        assert b"Program complete" in read_until_ended(board, port)
        port.close()


@needs_qemu
def test_missing_elf_and_bad_elf(tmp_path: Path, firmware: Path) -> None:
    with pytest.raises(QemuError, match="no such firmware ELF"):
        QemuBoard(tmp_path / "none.elf").start()
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"not an elf at all")
    with pytest.raises(QemuError, match=r"junk\.elf: a text file, not an ELF file \(QEMU would"):
        QemuBoard(junk).start()
    with pytest.raises(QemuError, match="no-such-qemu: not found"):
        QemuBoard(firmware, qemu="no-such-qemu").start()
