"""Sending files to a board: XMODEM (the PyPI ``xmodem`` package) with progress and limits.

The ``xmodem`` package (0.5.0) does the protocol: CRC-16 or checksum as the receiver asks
(``C`` or NAK), 128-byte (``xmodem``) or 1K (``xmodem1k``) blocks, up to ``retries``
resends of a block on NAK, a garbled answer or a time-out, then CAN CAN. What etu adds
around it: the port (any pyserial handle), counted bytes in each direction, progress
records (bytes, rate, ETA, block, retries), and failures as one line naming the block.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import serial

ACK, NAK, CAN = b"\x06", b"\x15", b"\x18"
FORMAT_OVERHEAD = {128: 3 + 2, 1024: 3 + 2}  # SOH/STX, block, ~block; CRC-16 (2 bytes)


class TransferError(RuntimeError):
    """A transfer that did not complete; the message names the file and the block."""


@dataclass(frozen=True, slots=True)
class Progress:
    file: str
    sent: int  # payload bytes acknowledged
    total: int
    rate: float  # payload bytes per second so far
    eta: float | None  # seconds
    block: int
    retries: int  # resends so far in this file
    phase: str = "transfer"

    def to_json(self) -> dict:
        return {"type": "progress", "file": self.file, "phase": self.phase, "bytes": self.sent,
                "total": self.total, "rate": round(self.rate, 1),
                "eta": None if self.eta is None else round(self.eta, 2), "block": self.block,
                "retries": self.retries}  # fmt: skip


@dataclass(frozen=True, slots=True)
class TransferStats:
    payload: int
    block_size: int
    blocks: int
    retries: int
    wire_out: int  # bytes the host wrote
    wire_in: int  # bytes the peer answered
    seconds: float
    eot_acknowledged: bool = True  # False: the peer went away right after the last block

    @property
    def goodput_share(self) -> float:
        """File bytes as a share of all bytes on the wire (both directions)."""
        return self.payload / max(self.wire_out + self.wire_in, 1)

    @property
    def format_share(self) -> float:
        """The same share for a perfect run: the block format's own overhead only."""
        per_block = self.block_size + FORMAT_OVERHEAD[self.block_size] + 1  # + the ACK
        return self.payload / max(self.blocks * per_block + 2, 1)  # + EOT and its ACK

    def to_json(self) -> dict:
        return {"type": "transferred", "bytes": self.payload, "block_size": self.block_size,
                "blocks": self.blocks, "retries": self.retries, "wire_out": self.wire_out,
                "wire_in": self.wire_in, "seconds": round(self.seconds, 3),
                "goodput_share": round(self.goodput_share, 5)}  # fmt: skip


class _EotUnanswered(Exception):
    """Every block was acknowledged but the EOT never was (the peer left at once)."""


class _Stalled(Exception):
    """The receiver said nothing for STALL seconds once blocks were flowing."""


class _Port:
    """getc/putc for the xmodem package over a pyserial handle, counting every byte."""

    EOT_TRIES = 3
    EOT_WAIT = 1.0
    START_PAUSE = 0.05
    STALL = 30.0  # silence from the receiver, once blocks flow, that ends the transfer

    def __init__(self, handle: serial.SerialBase, pending: bytes = b"") -> None:
        self.handle = handle
        self.pending = bytearray(pending)  # read before the call (after a prompt's text)
        self.all_acked = False  # set once the last block is acknowledged: the EOT phase
        self.eot_unanswered = 0
        self.wire_out = 0
        self.wire_in = 0
        self.last_answer = b""
        self.last_heard = time.monotonic()  # when the receiver last sent anything
        self.lost: str | None = None

    def getc(self, size: int, timeout: float = 1) -> bytes | None:
        """Once blocks flow, a ``C`` is a stale start request (a receiver repeats it until
        the first block arrives) and never an answer to a block: it is skipped, or the
        package would resend block 1 for each queued ``C``."""
        if self.all_acked:
            timeout = min(timeout, self.EOT_WAIT)
        if self.wire_out:  # blocks flow: the whole silence is bounded, not each retry
            left = self.STALL - (time.monotonic() - self.last_heard)
            if left <= 0:
                raise _Stalled
            timeout = min(timeout, left)
        deadline = time.monotonic() + timeout
        while True:
            if self.pending:
                data = bytes(self.pending[:size])
                del self.pending[:size]
                self.wire_in += len(data)
                self.last_answer = data
                if data == b"C" and self.wire_out:
                    continue
                return data
            try:
                if self.handle.timeout != timeout:  # the setter reconfigures the port
                    self.handle.timeout = timeout
                data = self.handle.read(size)
            except (serial.SerialException, OSError) as error:
                self.lost = str(error) or type(error).__name__
                raise
            self.wire_in += len(data)
            if data:
                self.last_answer = data
                self.last_heard = time.monotonic()
            if data == b"C" and self.wire_out and time.monotonic() < deadline:
                timeout = max(deadline - time.monotonic(), 0.001)
                continue
            if data in (b"C", NAK) and not self.wire_out:
                # lrzsz's rx can discard what arrives right after its start request:
                # give it a moment, or block 1 is lost and waits out a whole time-out.
                time.sleep(self.START_PAUSE)
            if not data and self.all_acked:
                self.eot_unanswered += 1
                if self.eot_unanswered >= self.EOT_TRIES:
                    raise _EotUnanswered
            return data or None

    def putc(self, data: bytes, timeout: float = 1) -> int | None:
        try:
            if self.handle.write_timeout is None and bounded_writes(self.handle):
                self.handle.write_timeout = max(timeout, 10)
            written = self.handle.write(data)  # no tcdrain: the peer's answer is the wait
        except (serial.SerialException, OSError) as error:
            self.lost = str(error) or type(error).__name__
            raise
        self.wire_out += written or 0
        return written or None


def bounded_writes(handle) -> bool:
    """The handle takes a write time-out. pyserial's RFC 2217 client refuses every write
    once one is set (NotImplementedError, "write_timeout is currently not supported"):
    an XMODEM transfer through ser2net would fail on its first block."""
    return not type(handle).__module__.endswith(".rfc2217")


def xmodem_send(
    handle: serial.SerialBase,
    data: bytes,
    *,
    name: str = "file",
    block_size: int = 128,
    retries: int = 16,
    timeout: float = 10.0,
    on_progress: Callable[[Progress], None] | None = None,
    pending: bytes = b"",
) -> TransferStats:
    """Send ``data`` to the XMODEM receiver on ``handle``; raise TransferError on failure.
    ``pending``: bytes already read from the port (a ``C`` that came with a prompt)."""
    from xmodem import XMODEM

    if block_size not in FORMAT_OVERHEAD:
        raise TransferError(f"{name}: XMODEM blocks are 128 or 1024 bytes, not {block_size}")
    port = _Port(handle, pending)
    mode = "xmodem1k" if block_size == 1024 else "xmodem"
    modem = XMODEM(port.getc, port.putc, mode=mode)
    total = len(data)
    blocks = max(1, -(-total // block_size))
    state = {"block": 0, "retries": 0, "acked": 0}
    started = time.monotonic()
    last_report = [0.0]

    def callback(total_packets: int, success_count: int, error_count: int) -> None:
        state["block"] = total_packets
        # A resend is a call with errors and no new ACK (the package also reports the ACK
        # that ends a block's errors with the count); EOT re-sends are not block retries.
        if error_count and success_count == state["acked"] and not port.all_acked:
            state["retries"] += 1
        state["acked"] = success_count
        port.all_acked = success_count >= blocks
        now = time.monotonic()
        if on_progress is None or (now - last_report[0] < 0.1 and success_count < blocks):
            return
        last_report[0] = now
        sent = min(success_count * block_size, total)
        rate = sent / max(now - started, 1e-6)
        eta = (total - sent) / rate if rate > 0 else None
        on_progress(Progress(name, sent, total, rate, eta, total_packets, state["retries"]))

    stream = _Reader(data)
    logger = logging.getLogger("xmodem.XMODEM")
    previous, logger.disabled = logger.disabled, True  # its errors become our one line
    try:
        ok = modem.send(stream, retry=retries, timeout=timeout, quiet=True, callback=callback)
    except _Stalled:
        with contextlib.suppress(serial.SerialException, OSError):
            handle.write(CAN + CAN)
        block = state["acked"] + 1
        raise TransferError(
            f"{name}: the receiver fell silent at block {block} of {blocks}: nothing for "
            f"{port.STALL:.0f} s (last received {_answer_name(port.last_answer)}"
            f"{' for block ' + str(state['acked']) if state['acked'] else ''}); sent CAN CAN"
        ) from None
    except _EotUnanswered:
        # lrzsz's rx behind a pty exits right after ACKing the EOT and the pty's hang-up
        # can swallow that ACK: every block was acknowledged, so the file is there.
        return _done(name, total, blocks, block_size, state, port, started, on_progress, False)
    except (serial.SerialException, OSError):
        if state["acked"] >= blocks:  # every block acknowledged; the peer left before EOT's ACK
            return _done(name, total, blocks, block_size, state, port, started, on_progress,
                         False)  # fmt: skip
        block = state["acked"] + 1
        raise TransferError(
            f"{name}: port lost at block {block} of {blocks} ({port.lost}); "
            "nothing was kept: the transfer starts again from block 1"
        ) from None
    finally:
        logger.disabled = previous
    if not ok:
        block = state["acked"] + 1
        if state["block"] == 0:
            answer = port.last_answer
            raise TransferError(
                f"{name}: the receiver never asked for data (no 'C' or NAK within "
                f"{retries} s; last seen {answer!r})"
            )
        raise TransferError(
            f"{name}: aborted at block {block} of {blocks} after {retries} retries "
            f"(last answer {port.last_answer[-8:]!r}); sent CAN CAN"
        )
    return _done(name, total, blocks, block_size, state, port, started, on_progress, True)


def _answer_name(answer: bytes) -> str:
    names = {ACK: "ACK", NAK: "NAK", CAN: "CAN", b"C": "'C'"}
    return names.get(answer[-1:], repr(answer[-8:])) if answer else "nothing"


def _done(name, total, blocks, block_size, state, port, started, on_progress, eot_acked):
    elapsed = time.monotonic() - started
    if on_progress is not None:
        on_progress(Progress(name, total, total, total / max(elapsed, 1e-6), 0.0, blocks,
                             state["retries"], "done"))  # fmt: skip
    return TransferStats(total, block_size, blocks, state["retries"], port.wire_out,
                         port.wire_in, elapsed, eot_acked)  # fmt: skip


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        self._at = 0

    def read(self, size: int) -> bytes:
        chunk = bytes(self._view[self._at : self._at + size])
        self._at += len(chunk)
        return chunk
