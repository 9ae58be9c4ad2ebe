"""The package stands on its own: the wheel, installed in a fresh venv outside the source
tree, runs `etu inspect` on the shipped demo, the console (a short Pilot run) and the
stand-in firmware build, from a folder that is not the checkout.

The venv gets only the wheel (pip --no-deps); its dependencies come from the venv running
the tests through a .pth line (offline and fast). The source tree is never on its path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
# The card's folders and the names they install under (pyproject's package-dir).
PACKAGES = {"etu_tui": "etu/tui", "parsers": "etu/parsers", "runner": "etu/runner",
            "fvp": "etu/fvp"}  # fmt: skip
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git (tracked files)")


def _tracked() -> list[str]:
    result = subprocess.run(["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True,
                            text=True, check=True)  # fmt: skip
    return result.stdout.split()


def _in_wheel(name: str) -> str:
    folder, rest = name.split("/", 1)
    return f"{PACKAGES[folder]}/{rest}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """Build the wheel from the tracked files, install it into a fresh venv."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()  # fmt: skip
    for name in tracked:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(source)], check=True, capture_output=True,
                   timeout=600)  # fmt: skip
    (wheel,) = wheels.glob("etu-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]},
    ).stdout.strip())  # fmt: skip
    # --target: pip writes only into the new venv and never looks at (or touches) what the
    # running venv has installed (an editable etu there would count as "already satisfied").
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], check=True, capture_output=True,
                   timeout=600)  # fmt: skip
    (site / "zz_shared_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(XDG_DATA_HOME=str(base / "data"), XDG_CONFIG_HOME=str(base / "config"),
               HOME=str(base / "home"))  # fmt: skip
    return {"wheel": wheel, "venv": venv, "python": python, "site": site, "work": work,
            "env": env, "base": base}  # fmt: skip


def run(installed: dict, *argv: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=installed["work"], env=installed["env"],
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def test_every_runtime_file_is_in_the_wheel(installed: dict) -> None:
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    missing = [name for name in map(_in_wheel, _tracked()) if name not in names]
    assert not missing, f"not in the wheel: {missing}"


def test_the_installed_package_is_used(installed: dict) -> None:
    result = run(
        installed,
        str(installed["python"]),
        "-c",
        "import etu.tui, etu.parsers, etu.runner, etu.fvp; print(etu.tui.__file__)",
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(installed["site"])


def test_inspect_the_shipped_demo(installed: dict) -> None:
    demo = installed["site"] / "etu" / "tui" / "demo" / "demo_cnn.pte"
    etu = [str(installed["python"]), str(installed["site"] / "bin" / "etu")]  # the entry point
    result = run(installed, *etu, "inspect", str(demo))
    assert result.returncode == 0, result.stderr
    assert "EthosUBackend" in result.stdout and "ethos-u55-128" in result.stdout
    elf = installed["site"] / "etu" / "tui" / "demo" / "firmware" / "arm_executor_runner.elf"
    result = run(installed, *etu, "elf", "--json", str(elf))
    assert result.returncode == 0 and '"regions_from": "ld_map"' in result.stdout


def test_the_console_opens_the_demo_headless(installed: dict) -> None:
    script = textwrap.dedent("""
        import asyncio
        from etu.tui.app import EtuApp

        async def main():
            app = EtuApp()
            async with app.run_test(size=(120, 36)) as pilot:
                for _ in range(600):
                    if app.load_state != "loading":
                        break
                    await pilot.pause(0.05)
                await pilot.press("ctrl+p")
                await pilot.pause(0.1)
                print("state", app.load_state)
                print("target", app.target)
                print("workspace", app.workspace)

        asyncio.run(main())
    """)
    result = run(installed, str(installed["python"]), "-c", script, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert lines["state"] == "ready"
    data = installed["base"] / "data" / "etu" / "demo"
    # the installed demo is read only for etu: the console works on a copy it may write to
    assert lines["target"] == str(data) and lines["workspace"] == str(data)
    assert (data / "demo_cnn.pte").is_file()


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
def test_the_stand_in_firmware_builds_from_the_package(installed: dict) -> None:
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        import etu.tui
        from etu.runner.firmware import FIRMWARE_SOURCES, build_stub_firmware
        demo = Path(etu.tui.__file__).parent / "demo" / "demo_cnn.pte"
        build = build_stub_firmware(demo, Path("fw"), ops=[
            "quantized_decomposed::quantize_per_tensor.out",
            "quantized_decomposed::dequantize_per_tensor.out"])
        print(FIRMWARE_SOURCES)
        print(build.elf)
    """)
    result = run(installed, str(installed["python"]), "-c", script)
    assert result.returncode == 0, result.stderr[-3000:]
    sources, elf = result.stdout.split()
    assert Path(sources).is_relative_to(installed["site"])
    assert Path(elf) == installed["work"] / "fw" / "arm_executor_runner.elf"
    assert Path(elf).read_bytes()[:4] == b"\x7fELF"


def test_the_compile_extras_tosa_tools_shares_no_folder_with_etu(installed: dict) -> None:
    """tosa-tools (from executorch[ethos-u]) ships a top-level `runner` package: installed into
    the same site-packages, and uninstalled again, it must leave etu's files and imports alone."""
    site, python = installed["site"], str(installed["python"])
    version = subprocess.run([sys.executable, "-m", "pip", "show", "tosa-tools"],
                             capture_output=True, text=True).stdout  # fmt: skip
    version = next((line.split()[1] for line in version.splitlines()
                    if line.startswith("Version:")), None)  # fmt: skip
    if version is None:
        pytest.skip("tosa-tools is not installed here (the compile extra)")
    wheels = installed["base"] / "tosa"
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d",
                              str(wheels), f"tosa-tools=={version}"], capture_output=True,
                             text=True, timeout=600)  # fmt: skip
    if fetched.returncode != 0:
        pytest.skip(f"tosa-tools {version} could not be fetched: {fetched.stderr[-300:]}")
    before = sorted(str(path.relative_to(site)) for path in (site / "etu").rglob("*.py"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), *map(str, wheels.glob("*.whl"))], check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    assert (site / "runner" / "__init__.py").is_file()  # tosa-tools' own top-level package
    both = run(
        installed,
        python,
        "-c",
        "import runner, etu.runner.run; print(runner.__file__); print(etu.runner.run.__file__)",
    )
    assert both.returncode == 0, both.stderr
    theirs, ours = both.stdout.split()
    assert Path(theirs) == site / "runner" / "__init__.py"
    assert Path(ours) == site / "etu" / "runner" / "run.py"
    removed = run(installed, python, "-m", "pip", "uninstall", "-y", "tosa-tools")
    assert removed.returncode == 0, removed.stderr
    assert not (site / "runner").exists()
    after = sorted(str(path.relative_to(site)) for path in (site / "etu").rglob("*.py"))
    assert after == before
    demo = site / "etu" / "tui" / "demo" / "demo_cnn.pte"
    result = run(installed, python, str(site / "bin" / "etu"), "inspect", str(demo))
    assert result.returncode == 0 and "EthosUBackend" in result.stdout, result.stderr
