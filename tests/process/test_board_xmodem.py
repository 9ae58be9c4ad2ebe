"""etu's XMODEM sender against lrzsz's rx (a peer nobody here wrote), over ptys."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
import serial

from etu.runner.boards.transfer import TransferError, _Port, xmodem_send
from tests.board_peers import FaultyRelay, Pty, random_faults, start_rx, wait_for

pytestmark = pytest.mark.skipif(
    not (shutil.which("rx") and shutil.which("socat")),
    reason="needs lrzsz (rx) and socat (make system-deps)",
)
PAD = 0x1A


def payload(size: int, seed: int = 1) -> bytes:
    return bytes((i * 131 + seed * 7 + (i >> 8)) & 0xFF for i in range(size))


def received(out: Path, data: bytes, block: int) -> None:
    got = out.read_bytes()
    padded = -(-len(data) // block) * block
    assert len(got) == padded
    assert got[: len(data)] == data and set(got[len(data) :]) <= {PAD}


@pytest.mark.parametrize("block", [128, 1024])
def test_send_to_rx(tmp_path: Path, block: int) -> None:
    data = payload(100_003)
    out = tmp_path / "out.bin"
    pty = Pty()
    rx = start_rx(pty, out)
    progress = []
    try:
        with serial.Serial(pty.path, 921600, timeout=1) as port:
            stats = xmodem_send(port, data, name="fw.img", block_size=block,
                                on_progress=progress.append)  # fmt: skip
        assert rx.wait(10) == 0
    finally:
        rx.kill()
        pty.close()
    received(out, data, block)
    assert stats.blocks == -(-len(data) // block)
    # rx on a loaded machine misses a block now and then (its own timing) and etu resends
    # it: every byte beyond the block format's own is a counted resend, nothing else.
    per_block = block + 5
    eots = stats.wire_out - (stats.blocks + stats.retries) * per_block
    # The xmodem package sends an EOT again for any answer but an ACK (rx may NAK the first
    # one) and etu stops after EOT_TRIES silent ones: beyond the start request and one answer
    # per block sent, every byte received is an answer to an EOT.
    answers_to_eots = stats.wire_in - 1 - (stats.blocks + stats.retries)
    assert 1 <= eots <= _Port.EOT_TRIES + max(answers_to_eots, 0), stats
    if stats.retries == 0:
        assert stats.goodput_share == pytest.approx(stats.format_share, rel=0.02)
    assert progress[-1].sent == len(data) and progress[-1].phase == "done"
    assert all(a.sent <= b.sent for a, b in itertools.pairwise(progress))


def test_relay_drops_and_corrupts_then_success(tmp_path: Path) -> None:
    data = payload(8_000, seed=3)
    out = tmp_path / "out.bin"
    host, peer = Pty(), Pty()
    rx = start_rx(peer, out, side="slave")
    relay = FaultyRelay(host, peer, random_faults(7, drop=0.0005, corrupt=0.002, until=6_000))
    try:
        with serial.Serial(host.path, 921600, timeout=1) as port:
            stats = xmodem_send(port, data, name="model.pte", block_size=128, timeout=1.5)
        assert rx.wait(10) == 0
    finally:
        relay.stop()
        rx.kill()
        host.close()
        peer.close()
    received(out, data, 128)
    assert stats.retries > 0  # the faults really hit, and were recovered by resending


def corrupt_from_block(number: int, frame: int):
    """A relay fault that corrupts the data of block ``number`` and every later block. The
    sender writes whole frames (SOH, block number, its complement, data, CRC) and nothing is
    dropped, so a frame starts at every multiple of ``frame`` and its second byte says which
    block it is."""
    current = {"block": 0}

    def faults(offset: int, byte: int) -> int:
        at = offset % frame
        if at == 1:
            current["block"] = byte
        return byte ^ 0xFF if at > 2 and current["block"] >= number else byte

    return faults


def test_relay_that_ruins_everything_aborts_naming_the_block(tmp_path: Path) -> None:
    data = payload(4096)
    out = tmp_path / "out.bin"
    host, peer = Pty(), Pty()
    rx = start_rx(peer, out, side="slave")
    # Blocks 1-10 pass; every copy of block 11 arrives with its data corrupt. The fault
    # follows the block number, not a stream offset: rx on a loaded machine misses a block
    # now and then, and the resend would move an offset into block 10.
    relay = FaultyRelay(host, peer, corrupt_from_block(11, frame=128 + 5))
    try:
        with (
            serial.Serial(host.path, 921600, timeout=1) as port,
            pytest.raises(TransferError) as caught,
        ):
            # rx's first request, awaited (as a board's prompt is): its start-up on a loaded
            # machine must not count against the 3 retries this test is about
            asked = b""
            deadline = time.monotonic() + 30
            while b"C" not in asked and time.monotonic() < deadline:
                asked += port.read(1)
            xmodem_send(port, data, name="fw.img", block_size=128, retries=3, timeout=1,
                        pending=asked)  # fmt: skip
        wait_for(lambda: rx.poll() is not None, 10)
    finally:
        relay.stop()
        rx.kill()
        host.close()
        peer.close()
    message = str(caught.value)
    assert message.startswith("fw.img: aborted at block 11 of 32 after 3 retries")
    assert "CAN" in message


def test_no_receiver_says_so(tmp_path: Path) -> None:
    pty = Pty()
    try:
        with serial.Serial(pty.path, 921600, timeout=1) as port:
            pty.write(b"hello from the wrong program\r\n")
            with pytest.raises(TransferError, match="never asked for data"):
                xmodem_send(port, b"x" * 200, name="fw.img", retries=2, timeout=0.5)
    finally:
        pty.close()


def test_port_unplugged_mid_transfer_aborts_cleanly_then_retry_from_start(tmp_path) -> None:
    data = payload(60_000, seed=5)
    host, peer = Pty(), Pty()
    out = tmp_path / "first.bin"
    rx = start_rx(peer, out, side="slave")
    unplug = threading.Event()

    def pass_then_unplug(offset: int, byte: int) -> int | None:
        if offset >= 20_000:
            unplug.set()
            return None
        return byte

    relay = FaultyRelay(host, peer, pass_then_unplug)

    def pull_the_cable() -> None:
        unplug.wait(30)
        relay.stop()
        os.close(host.master)  # the USB bridge is gone: the line hangs up under etu
        os.close(host.slave)

    threading.Thread(target=pull_the_cable, daemon=True).start()
    port = serial.Serial(host.path, 921600, timeout=1)
    with pytest.raises(TransferError) as caught:
        xmodem_send(port, data, name="fw.img", block_size=1024, timeout=5)
    port.close()
    rx.kill()
    peer.close()
    assert "port lost at block" in str(caught.value)
    assert "starts again from block 1" in str(caught.value)
    # Plugged back: the retry is a new transfer from block 1, and it completes.
    again, out2 = Pty(), tmp_path / "second.bin"
    rx2 = start_rx(again, out2)
    try:
        with serial.Serial(again.path, 921600, timeout=1) as port:
            stats = xmodem_send(port, data, name="fw.img", block_size=1024)
        assert rx2.wait(10) == 0
    finally:
        rx2.kill()
        again.close()
    received(out2, data, 1024)
    assert stats.blocks == 59


def test_a_receiver_that_falls_silent_mid_file_ends_in_bounded_time(tmp_path, monkeypatch):
    """rx stops answering (its process stopped) after 20 KB: the whole silence is bounded
    (here 2 s; 30 s by default), not 16 retries of 10 s, and the line names what came last."""
    import signal
    import time

    from etu.runner.boards import transfer

    data = payload(60_000, seed=9)
    pty = Pty()
    rx = start_rx(pty, tmp_path / "silent.bin")
    stopped = threading.Event()
    frozen_at = []

    def freeze_the_receiver(progress) -> None:
        # The 2 s bound starts here: a loaded machine may keep rx quiet for longer than
        # that before 20 KB, which is a slow receiver, not the silence under test.
        if progress.sent >= 20_000 and not stopped.is_set():
            monkeypatch.setattr(transfer._Port, "STALL", 2.0)
            frozen_at.append(time.monotonic())
            stopped.set()
            os.kill(rx.pid, signal.SIGSTOP)

    try:
        with (
            serial.Serial(pty.path, 921600, timeout=1) as port,
            pytest.raises(TransferError) as caught,
        ):
            xmodem_send(port, data, name="fw.img", block_size=1024, timeout=10,
                        on_progress=freeze_the_receiver)  # fmt: skip
    finally:
        os.kill(rx.pid, signal.SIGCONT)
        rx.kill()
        pty.close()
    assert stopped.is_set()
    elapsed = time.monotonic() - frozen_at[0]
    assert elapsed < 8, elapsed
    text = str(caught.value)
    assert "fell silent at block" in text and "nothing for 2 s" in text
    assert "last received ACK for block" in text and "\n" not in text
