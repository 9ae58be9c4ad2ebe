"""The MPS3 (and MPS4) USB drive: the images are copied onto the board's drive as 8.3
files with an images.txt naming their MCC addresses, then the MCC reboots the board, which
writes them. The application port is opened before the reboot, so no boot byte is lost.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from etu.runner.boards.flash_base import (
    FlashError,
    FlashFile,
    FlashResult,
    NeedMissing,
    ProgressFn,
    Status,
    after_prompt,
    needed_prompt,
    read_image,
)
from etu.runner.boards.profiles import BoardProfile
from etu.runner.boards.prompts import PromptTimeout, expect
from etu.runner.boards.source import PortError, open_port
from etu.runner.boards.transfer import Progress

_NOT_83 = re.compile(r"[^A-Z0-9_]")


def short_name(stem: str, index: int, used: set[str]) -> str:
    """An 8.3 name (the MCC reads nothing else): up to 6 letters of the stem + 2 digits."""
    base = _NOT_83.sub("", stem.upper())[:6] or "IMAGE"
    for n in range(index, index + 100):
        name = f"{base[:6]}{n % 100:02d}.BIN"
        if name not in used:
            used.add(name)
            return name
    raise FlashError(f"{stem}: no free 8.3 name")


def load_segments(path: Path) -> list[tuple[int, bytes]]:
    """(physical address, bytes) of an ELF's PT_LOAD segments that carry file data."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            return [
                (seg["p_paddr"], seg.data()[: seg["p_filesz"]])
                for seg in elf.iter_segments()
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"] > 0
            ]
    except (ELFError, OSError) as error:
        raise FlashError(f"{path}: not a readable ELF ({error})") from None


def mcc_address(profile: BoardProfile, cpu: int, size: int, what: str) -> int:
    for entry in profile.transfer.get("address_map", []):
        base, length = int(entry["cpu"]), int(entry["size"])
        if base <= cpu and cpu + size <= base + length:
            return int(entry["mcc"]) + (cpu - base)
    raise FlashError(f"{what}: 0x{cpu:08x}+{size:,} is outside the MCC's address view")


def mps3_images(profile: BoardProfile, files: list[FlashFile]) -> list[tuple[str, int, bytes]]:
    """(8.3 name, MCC address, bytes) for each load segment / placed binary."""
    images, used = [], set()
    for file in files:
        if file.address is not None:
            data = read_image(file)
            address = mcc_address(profile, file.address + file.offset, len(data), str(file.path))
            images.append((short_name(file.path.stem, len(images), used), address, data))
            continue
        segments = load_segments(file.path)
        if not segments:
            raise FlashError(
                f"{file.path}: no load segment with data (give FILE@ADDRESS for a .bin)"
            )
        for cpu, data in segments:
            address = mcc_address(profile, cpu, len(data), f"{file.path} segment")
            images.append((short_name(file.path.stem, len(images), used), address, data))
    return images


def images_txt(images: list[tuple[str, int, bytes]], update: str = "AUTO") -> str:
    lines = ["TITLE: Versatile Express Images Configuration File", "[IMAGES]",
             f"TOTALIMAGES: {len(images)}"]  # fmt: skip
    for n, (name, address, _) in enumerate(images):
        lines += [f"IMAGE{n}ADDRESS: 0x{address:08X}", f"IMAGE{n}UPDATE: {update}",
                  f"IMAGE{n}FILE: \\SOFTWARE\\{name}"]  # fmt: skip
    return "\r\n".join(lines) + "\r\n"


MOUNTS = Path("/proc/mounts")


def find_drive(profile: BoardProfile) -> Path | None:
    """The mounted folder whose name is the board's volume label (V2M-MPS3)."""
    label = str(profile.transfer.get("volume_label", "V2M-MPS3"))
    try:
        mounts = MOUNTS.read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        parts = line.split()
        if len(parts) > 1:
            # the kernel writes a space, tab, newline or backslash in a path as \ooo
            where = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[1]))
            if where.name == label:
                return where
    return None


def images_folder(drive: Path, images_dir: str) -> Path:
    """The folder ``images.txt`` goes in. A pattern (``MB/*/*``, for a board whose folder
    name etu does not know, the MPS4) is the one matching folder on the drive that already
    holds an ``images.txt`` (the FPGA image's board files put one there)."""
    if not any(char in images_dir for char in "*?["):
        return drive / images_dir
    found = sorted({p.parent for p in drive.glob(f"{images_dir}/images.txt") if p.is_file()})
    if len(found) != 1:
        what = "none" if not found else ", ".join(str(f.relative_to(drive)) for f in found)
        raise FlashError(
            f"{drive}: one folder {images_dir}/ with an images.txt expected, found {what} "
            "(name it in your own profile's transfer.images_dir)"
        )
    return found[0]


def flash_mps3(
    profile: BoardProfile,
    files: list[FlashFile],
    *,
    drive: Path | None,
    mcc_port: str,
    app_port: str | None,
    status: Status = lambda text: None,
    progress: ProgressFn | None = None,
) -> FlashResult:
    drive = drive or find_drive(profile)
    if drive is None or not Path(drive).is_dir():
        label = profile.transfer.get("volume_label", "V2M-MPS3")
        raise NeedMissing("drive", f"{drive or label}: the board's USB drive is not mounted")
    images = mps3_images(profile, files)
    software = Path(drive) / "SOFTWARE"
    config_dir = images_folder(Path(drive), str(profile.transfer["images_dir"]))
    if not config_dir.resolve().is_relative_to(Path(drive).resolve()):
        raise FlashError(f"{profile.transfer['images_dir']!r}: images_dir leaves the drive {drive}")
    software.mkdir(exist_ok=True)
    config_dir.mkdir(parents=True, exist_ok=True)
    result = FlashResult(port=app_port)
    total = sum(len(data) for _, _, data in images)
    done, started = 0, time.monotonic()
    for name, address, data in images:
        status(f"copying {name} ({len(data):,} bytes) for 0x{address:08X}")
        with open(software / name, "wb") as out:
            for at in range(0, len(data), 1 << 16):
                out.write(data[at : at + (1 << 16)])
                done += min(1 << 16, len(data) - at)
                if progress:
                    rate = done / max(time.monotonic() - started, 1e-6)
                    progress(Progress(name, done, total, rate, (total - done) / rate, 0, 0, "copy"))
            out.flush()
            os.fsync(out.fileno())
        result.files.append({"file": name, "mcc_address": address, "bytes": len(data)})
    (config_dir / "images.txt").write_text(
        images_txt(images, str(profile.transfer.get("update", "AUTO"))), newline=""
    )
    os.sync()
    app = None
    try:
        if app_port:
            app = open_port(app_port, profile.serial_settings)  # before the reboot: no byte lost
        mcc = open_port(mcc_port, profile.serial_settings)
    except PortError as error:
        if app is not None:
            app.close()
        raise FlashError(str(error)) from None
    try:
        mcc.write(b"\r\n")
        expect(mcc, needed_prompt(profile, "mcc"), port_name=mcc_port)
        status(f"reboot on the MCC ({mcc_port})")
        mcc.write(b"reboot\r\n")
        # The banners may come in one burst (small files are written at once): each
        # prompt is looked for first in what came after the previous one.
        after = expect(mcc, needed_prompt(profile, "firmware"), port_name=mcc_port)
        after = after_prompt(mcc, needed_prompt(profile, "images"), after, mcc_port)
        written = needed_prompt(profile, "written")
        done = after.count(written.text.encode())
        while done < len(images):
            after = expect(mcc, written, port_name=mcc_port)
            done += 1 + after.count(written.text.encode())
    except PromptTimeout as error:
        if app is not None:
            app.close()
        raise FlashError(str(error)) from None
    finally:
        mcc.close()
    result.handle = app
    return result
