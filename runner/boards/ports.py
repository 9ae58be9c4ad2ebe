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
