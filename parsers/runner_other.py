"""Lines printed by others than the runtime: the Ethos-U driver, the platform, the FVP and
the run scripts.

:class:`OtherLines` is a part of :class:`etu.parsers.runner_log.RunnerLogParser` (its base
class): the parser tells these lines apart by their first characters
(:func:`etu.parsers.log_prefix.classify_other` names their kind) and hands each kind to its
handler in :data:`OTHER_HANDLERS`; a driver's ``E:``/``I:`` line goes to
:meth:`OtherLines._driver`. The handlers read and change the parser's state, set by
``RunnerLogParser.__init__``, and close an open report with the parser's ``_settle``.
"""

from __future__ import annotations

import re

from etu.parsers.log_values import after, leading_int, status_in
from etu.parsers.runner_events import AssertFailed, Event, FvpBanner, FvpStopped, RunError
from etu.parsers.runner_reports import EtdumpCollector, FaultCollector, Report
from etu.parsers.status_codes import status_name

_SIM_TIME = re.compile(r"\[(\d+(?:\.\d+)? ?[munp]?s)\]")


class OtherLines:
    """The other-line handlers of :class:`~etu.parsers.runner_log.RunnerLogParser`."""

    # The parser's state they use (RunnerLogParser.__init__ sets it).
    _group: Report | None  # the multi-line report being collected
    _etdump: EtdumpCollector | None
    _etdump_blocks: int
    _max_etdump: int

    def _settle(self, kind: str | None, out: list[Event]) -> Report | None:
        raise NotImplementedError  # RunnerLogParser's

    # Hard faults: the platform's line plus its register line(s).

    def _start_fault(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        self._group = FaultCollector(n, text)

    def _driver(self, n: int, level: str, message: str, out: list[Event]) -> None:
        group = self._group
        if group is not None and group.kind == "fault" and level == "E":
            group.add(message)  # Zephyr's fault dump continues
            return
        if "HARD FAULT" in message or "FATAL ERROR" in message:
            self._start_fault(n, message.strip(), out)
            return
        if self._group is not None:
            self._settle(None, out)
        if level == "E":
            status = status_in(message)
            out.append(RunError(n, status, status_name(status), message, "driver"))

    # Handlers of the kinds classify_other names (see OTHER_HANDLERS).

    def _o_fault(self, n: int, text: str, out: list[Event]) -> None:
        self._start_fault(n, text.strip(), out)

    def _o_fault_more(self, n: int, text: str, out: list[Event]) -> None:
        group = self._group
        if group is not None and group.kind == "fault":
            group.add(text)
        else:
            if self._group is not None:
                self._settle(None, out)

    def _o_banner(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        body = text.strip()
        if body.startswith("Ethos-U rev"):
            version, _, date = body[len("Ethos-U rev") :].partition("---")
            out.append(FvpBanner(n, "Ethos-U", version.strip() or None, date.strip() or None))
        elif body.startswith("Fast Models ["):
            inner = body[len("Fast Models [") :].rstrip("]")
            version, _, date = inner.partition(" (")
            out.append(FvpBanner(n, "Fast Models", version.strip(), date.rstrip(")") or None))
        elif "with FVP:" in body:
            model = after(body, "with FVP:").split()[:1]
            if model:
                out.append(FvpBanner(n, model[0]))

    def _o_info(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        body = text[len("Info:") :].strip()
        if body.startswith("Simulation is stopping."):
            reason = after(body, "Reason:").strip().rstrip(".") or body
            low = reason.lower()
            kind = "time_limit" if "exceeded" in low or "limit" in low else "stopping"
            out.append(FvpStopped(n, kind, reason))
        elif "Simulation is terminated" in body:
            out.append(FvpStopped(n, "terminated", body.rstrip(".")))
        elif "Simulation stopped" in body:
            out.append(FvpStopped(n, "stopped", after(body, ": ").rstrip(".") or body))

    def _o_warning(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if "Simulation stopped" in text:
            m = _SIM_TIME.search(text)
            reason = text[text.rfind("]") + 1 :].strip()
            out.append(FvpStopped(n, "stopped", reason, m.group(1) if m else None))

    def _o_exit(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if text.startswith("Application exit code:"):
            code = leading_int(after(text, ":"))
            out.append(FvpStopped(n, "exit", text.strip().rstrip("."), exit_code=code))
        elif text.strip() == "EXITTHESIM":
            out.append(FvpStopped(n, "shutdown_tag", "EXITTHESIM"))

    def _o_script(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if "Simulation complete," in text:
            code = leading_int(after(text, "Simulation complete,"))
            out.append(FvpStopped(n, "script", text.strip(), exit_code=code))

    def _o_launch(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        out.append(FvpStopped(n, "launch_failed", text.strip()))

    def _o_assert(self, n: int, text: str, out: list[Event]) -> None:
        # newlib's assert(): 'assertion "cond" failed: file "f.c", line 12, function: fn'
        if self._group is not None:
            self._settle(None, out)
        cond = text.split('"')[1] if text.count('"') >= 2 else None
        function = after(text, "function:").strip() or None
        out.append(AssertFailed(n, function, cond, None, None, None, text.strip()))

    def _o_etdump_start(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        self._etdump = EtdumpCollector(n, text, self._etdump_blocks, self._max_etdump)
        self._etdump_blocks += 1


# classify_other's kinds of line → the parser's handler (a plain function of (parser, n,
# text, out)).
OTHER_HANDLERS = {
    "banner": OtherLines._o_banner,
    "info": OtherLines._o_info,
    "warning": OtherLines._o_warning,
    "fault": OtherLines._o_fault,
    "fault_more": OtherLines._o_fault_more,
    "exit": OtherLines._o_exit,
    "etdump_start": OtherLines._o_etdump_start,
    "script": OtherLines._o_script,
    "assert": OtherLines._o_assert,
    "launch": OtherLines._o_launch,
}
