"""Board profiles (TOML), `etu boards` and `etu ports`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etu.runner.boards.profiles import ProfileError, load_profile, load_profiles
from etu.tui.cli import main

BUILT_IN = {"wiseeye2", "mps3-an552", "mps3-an555", "pyocd", "qemu-an547"}


def cli(*argv: str, capsys) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_builtin_profiles_hold_the_reference_facts() -> None:
    profiles = load_profiles(user_dir=Path("/nonexistent"))
    assert set(profiles) >= BUILT_IN
    we2 = profiles["wiseeye2"]
    assert we2.baud == 921600 and we2.framing == "8N1"
    assert we2.matches(0x1A86, 0x55D2) and we2.matches(0x1A86, 0x55D3)
    assert we2.transfer["placement_address"] == 0xB7B000
    assert "end file transmission" in we2.prompts["end_question"].text
    mps3 = profiles["mps3-an552"]
    assert mps3.matches(0x0403, 0x6011) and mps3.memory_preset == "corstone-300"
    assert mps3.transfer["images_dir"] == "MB/HBI0309C/AN552"
    assert mps3.prompts["mcc"].text == "Cmd>"
    assert profiles["mps3-an555"].transfer["images_dir"] == "MB/HBI0309C/AN555"
    qemu = profiles["qemu-an547"]
    assert qemu.label == "emulated board (QEMU, no NPU)" and qemu.method == "qemu"
    assert qemu.serial_settings == {"baudrate": 115200, "bytesize": 8, "parity": "N",
                                    "stopbits": 1}  # fmt: skip


def test_user_profiles_add_and_replace(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "mine.toml").write_text(
        'name = "my-board"\n[usb]\nmatch = ["CAFE:0001"]\n[serial]\nbaud = 57600\n'
        '[transfer]\nmethod = "xmodem"\nblock = 1024\n'
        '[prompts]\nboot = { text = "hello", timeout = 2 }\n'
        '[memory]\nregions = ["SRAM:0x20000000:256K"]\n'
    )
    (tmp_path / "qemu.toml").write_text(
        'name = "qemu-an547"\ndescription = "mine"\n[transfer]\nmethod = "qemu"\n'
    )
    monkeypatch.setenv("ETU_BOARDS_DIR", str(tmp_path))
    profiles = load_profiles()
    assert profiles["my-board"].baud == 57600 and not profiles["my-board"].builtin
    assert profiles["my-board"].memory_regions == ("SRAM:0x20000000:256K",)
    assert profiles["qemu-an547"].description == "mine"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name = "x"\n[serial]\nbaud = "fast"\n[transfer]\nmethod = "qemu"\n',
         r"bad\.toml:3: serial\.baud: expected int"),
        ('name = "x"\n[transfer]\nmethod = "carrier-pigeon"\n',
         r"bad\.toml:3: transfer\.method: 'carrier-pigeon'"),
        ('name = "x"\n[usb]\nmatch = ["12:34"]\n[transfer]\nmethod = "qemu"\n',
         r"bad\.toml:3: usb\.match: '12:34' is not VID:PID"),
        ('name = "x"\n[transfer]\nmethod = "xmodem"\nblock = 512\n',
         r"bad\.toml:4: transfer\.block: 512"),
        ('[transfer]\nmethod = "qemu"\n', r"bad\.toml: name: missing key 'name'|missing key"),
        ('name = "x"\n[transfer]\nmethod = "qemu"\n[memory]\npreset = "z80"\n',
         r"bad\.toml:5: memory\.preset: 'z80'"),
        ('name = "x"\ncolour = 1\n[transfer]\nmethod = "qemu"\n', r"bad\.toml:2: colour: unknown"),
        ('name = "x"\n[transfer\n', r"bad\.toml: .*line 2"),
    ],
)  # fmt: skip
def test_profile_errors_name_file_line_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=expected):
        load_profile(path)


def test_etu_boards(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ETU_BOARDS_DIR", str(tmp_path))
    code, out, _ = cli("boards", "--json", capsys=capsys)
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and {r["name"] for r in records} >= BUILT_IN
    we2 = next(r for r in records if r["name"] == "wiseeye2")
    assert we2["usb"] == ["1A86:55D2", "1A86:55D3"] and we2["method"] == "xmodem-wiseeye2"
    (tmp_path / "broken.toml").write_text('name = "b"\n[transfer]\nmethod = 3\n')
    code, _, err = cli("boards", capsys=capsys)
    assert code == 2 and err.startswith("etu: ") and "broken.toml:3: transfer.method" in err


def test_etu_ports_works_with_or_without_ports(capsys) -> None:
    code, out, err = cli("ports", "--json", capsys=capsys)
    assert code == 0 and err == ""
    for line in out.splitlines():
        record = json.loads(line)
        assert {"device", "vid_pid", "serial_number", "description", "profiles"} <= set(record)
    code, out, _ = cli("ports", capsys=capsys)
    assert code == 0 and out
