"""The serial ports on this machine (pyserial's ``list_ports``) and which profiles match."""

from __future__ import annotations

from dataclasses import dataclass

from etu.runner.boards.profiles import BoardProfile


@dataclass(frozen=True, slots=True)
class PortInfo:
    device: str
    vid: int | None
    pid: int | None
    serial_number: str | None
    description: str
    location: str | None
    interface: str | None
    profiles: tuple[str, ...]

    @property
    def vid_pid(self) -> str | None:
        return None if self.vid is None else f"{self.vid:04X}:{self.pid or 0:04X}"

    def to_json(self) -> dict:
        return {
            "device": self.device,
            "vid_pid": self.vid_pid,
            "serial_number": self.serial_number,
            "description": self.description,
            "location": self.location,
            "interface": self.interface,
            "profiles": list(self.profiles),
        }


def list_serial_ports(profiles: dict[str, BoardProfile] | None = None) -> list[PortInfo]:
    """Every port pyserial sees, sorted by device; works (empty) with none attached."""
    from serial.tools import list_ports

    if profiles is None:
        from etu.runner.boards.profiles import load_profiles

        profiles = load_profiles()
    found = []
    for port in sorted(list_ports.comports(), key=lambda p: p.device):
        matching = tuple(n for n, p in profiles.items() if p.matches(port.vid, port.pid))
        found.append(
            PortInfo(
                device=port.device,
                vid=port.vid,
                pid=port.pid,
                serial_number=port.serial_number,
                description=port.description or "",
                location=port.location,
                interface=port.interface,
                profiles=matching,
            )
        )
    return found


def ports_for(profile: BoardProfile, ports: list[PortInfo] | None = None) -> list[PortInfo]:
    ports = list_serial_ports() if ports is None else ports
    return [p for p in ports if profile.name in p.profiles]


def pick_ports(
    profile: BoardProfile,
    ports: list[PortInfo] | None = None,
    *,
    port: str | None = None,
    mcc_port: str | None = None,
    drive=None,
    monitor: bool = True,
):
    """The one place a board's ports are chosen, for the CLI and the Boards tab alike: what
    was given is kept; what the profile's flash method needs (and, to ``monitor``, the
    application port) is found among the connected ports that match the profile. An MPS3
    shows four ports; the MCC's and the application's are picked by their order among the
    ports of the same board (``transfer.mcc_port`` / ``app_port``), the board being the one
    ``port`` belongs to when it is given. Raises NeedMissing (runner.boards.flash) naming the
    port it could not choose."""
    from etu.runner.boards.flash import BoardLink, NeedMissing, method_of

    method = method_of(profile)
    wanted = set(method.needs) | ({"port"} & set(method.uses) if monitor else set())
    given = {"port": port, "mcc_port": mcc_port}
    if not any(given[need] is None for need in wanted & set(given)):
        return BoardLink(port, mcc_port, drive)
    listed = list_serial_ports() if ports is None else ports
    matching = [p for p in listed if profile.name in p.profiles]
    if port is not None:  # the board the given port belongs to
        mine = next((p for p in listed if p.device == port), None)
        if mine is not None and mine.serial_number:
            matching = [p for p in matching if p.serial_number == mine.serial_number]
    if "mcc_port" not in wanted:
        if len(matching) == 1:
            return BoardLink(matching[0].device, mcc_port, drive)
        if not matching and "port" not in method.needs:
            return BoardLink(None, mcc_port, drive)  # pyOCD: flashed, nothing to follow
        raise _no_single_port(profile, matching, "port")
    boards = {p.serial_number for p in matching}
    if not matching or len(boards) > 1:
        raise _no_single_port(profile, matching, "mcc_port" if mcc_port is None else "port")
    ordered = sorted(matching, key=lambda p: (p.interface or "", p.location or "", p.device))

    def nth(key: str, default: int, need: str) -> str:
        index = int(profile.transfer.get(key, default))
        if not 0 <= index < len(ordered):
            raise NeedMissing(need, f"{profile.name}: the board shows {len(ordered)} ports, "
                              f"not {index + 1}")  # fmt: skip
        return ordered[index].device

    mcc_port = mcc_port or nth("mcc_port", 0, "mcc_port")
    if port is None and monitor:
        port = nth("app_port", 1, "port")
    if port == mcc_port:  # the MCC's port was picked: the application's is its sibling
        port = nth("app_port", 1, "port") if monitor else None
    return BoardLink(port, mcc_port, drive)


def _no_single_port(profile: BoardProfile, matching: list[PortInfo], need: str):
    from etu.runner.boards.flash import NeedMissing

    if not matching:
        return NeedMissing(need, f"{profile.name}: no connected port matches the profile")
    names = ", ".join(p.device for p in matching)
    return NeedMissing(need, f"{profile.name}: several ports match ({names})")
