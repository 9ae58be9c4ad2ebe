"""The emulated board's NPU lines: what etu's driver layer prints for each Ethos-U invoke
etu answered (``etu-npu: …``, one line per invoke), read into :class:`NpuInvoke`.

The text after ``etu-npu: `` is etu's own answer (runner/npu_bridge.py and npu_model.py
write it; both sides change together), or the driver layer's own error:

- ``delegate 0: 48 operations (4 conv, 36 pool), 2234567 MACs, 9000 B read, 3000 B written,
  executed by etu's Ethos-U model`` (earlier: ``2.2 M MACs`` and no bytes)
- ``delegate 0: 1 input(s) 3072 B -> 1 output(s) 40 B, computed by the TOSA reference model
  (command stream not executed)[; etu's Ethos-U model: WHY]``
- an error (level E): ``delegate 0: operation 3 (NPU_OP_POOL): activation tanh is not
  supported by etu's Ethos-U model``, ``invoke 2: …``, or the driver layer's own words.

A device prints these lines, so every number is bounded and every field may be missing.
"""

from __future__ import annotations

import re

from etu.parsers.runner_events import NpuInvoke

PREFIX = "etu-npu:"
_WHO = re.compile(r"(delegate|invoke) (\d{1,9})(?=[: ])")
_OPERATIONS = re.compile(r"(?<![\d.])(\d{1,12}) operations(?: \(([^)]{0,400})\))?")
_KIND = re.compile(r"(\d{1,12}) ([a-z][a-z ]{0,40})")
_MACS = re.compile(r"(?<![\d.])(\d{1,18}(?:\.\d{1,6})?)(?: ([kMG]))? MACs")
_BYTES = re.compile(r"(?<![\d.])(\d{1,18}) B read, (\d{1,18}) B written")
_REFERENCE = re.compile(
    r"(?<![\d.])(\d{1,9}) input\(s\) (\d{1,18}) B -> (\d{1,9}) output\(s\) (\d{1,18}) B"
)
_OPERATION = re.compile(r"operation (\d{1,9})(?: \((NPU_[A-Z0-9_]{1,40})\))?")
_UNITS = {"k": 10**3, "M": 10**6, "G": 10**9}
MODEL_MARK = "executed by etu's Ethos-U model"
REFERENCE_MARK = "computed by the TOSA reference model"
FALLBACK_MARK = "; etu's Ethos-U model: "


def npu_invoke(line_no: int, level: str | None, message: str) -> NpuInvoke | None:
    """The invoke an ``etu-npu: …`` message reports (None for another message)."""
    body = message.lstrip(" ")
    if not body.startswith(PREFIX):
        return None
    text = body[len(PREFIX) :].strip()
    who = _WHO.match(text)
    delegate = int(who[2]) if who and who[1] == "delegate" else None
    invoke = int(who[2]) if who and who[1] == "invoke" else None
    ok = level not in ("E", "F")
    if not ok:
        op = _OPERATION.search(text)
        executor = "model" if op or "etu's Ethos-U model" in text else None
        if executor is None and "TOSA reference model" in text:
            executor = "reference"
        error = text[who.end() + 1 :].strip() if who and text[who.end()] == ":" else text
        return NpuInvoke(
            line_no, delegate, False, executor, error=error,
            operation=int(op[1]) if op else None, command=op[2] if op else None,
            invoke=invoke, text=text,
        )  # fmt: skip
    if MODEL_MARK in text:
        ops = _OPERATIONS.search(text)
        kinds = None
        if ops and ops[2]:
            kinds = {m[2].strip(): int(m[1]) for m in _KIND.finditer(ops[2])}
        macs = _MACS.search(text)
        moved = _BYTES.search(text)
        return NpuInvoke(
            line_no, delegate, True, "model",
            operations=int(ops[1]) if ops else None, kinds=kinds,
            macs=_macs(macs[1], macs[2]) if macs else None,
            bytes_read=int(moved[1]) if moved else None,
            bytes_written=int(moved[2]) if moved else None,
            invoke=invoke, text=text,
        )  # fmt: skip
    if REFERENCE_MARK in text:
        io = _REFERENCE.search(text)
        cut = text.find(FALLBACK_MARK)
        return NpuInvoke(
            line_no, delegate, True, "reference",
            bytes_read=int(io[2]) if io else None, bytes_written=int(io[4]) if io else None,
            fallback=text[cut + len(FALLBACK_MARK) :] if cut >= 0 else None,
            invoke=invoke, text=text,
        )  # fmt: skip
    return NpuInvoke(line_no, delegate, True, None, invoke=invoke, text=text)


def _macs(number: str, unit: str | None) -> int:
    if unit is None and "." not in number:
        return int(number)
    return round(float(number) * _UNITS.get(unit or "", 1))
