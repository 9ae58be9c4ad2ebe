"""Where the runtime source comes from when no variable names it (issue 24 §5): a source
mirror, found by one rule in runner/runtime_source.py, the way `.ci/run` finds it
(`ETU_SOURCE_MIRROR`, else `shared/vendor/` in or beside etu's checkout), so `make run`,
`etu serve` and a plain shell build the real runner as `make test` does; with no mirror the
one-line error names every variable and setting."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from etu.runner.runtime_source import (
    CHECKOUT,
    ENV_CMSIS,
    ENV_DRIVER,
    ENV_MIRROR,
    ENV_SOURCE,
    MIRROR_EXECUTORCH,
    SourceError,
    find_executorch,
    find_sibling,
    source_mirror,
)
from tests.helpers import DEMO, etu

SOURCE_VARIABLES = (ENV_SOURCE, ENV_DRIVER, ENV_CMSIS, ENV_MIRROR)


def tarball(path: Path, files: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def fake_mirror(folder: Path) -> Path:
    """A mirror laid out as shared/vendor/ is: ExecuTorch, the driver and CMSIS archives."""
    tarball(folder / "executorch-runtime-src-abcdef12.tar.gz",
            {"executorch/CMakeLists.txt": "project(executorch)\n",
             "executorch/runtime/README": "runtime\n"})  # fmt: skip
    tarball(folder / "ethos-u-core-driver-1234abcd.tar.gz",
            {"ethos-u-core-driver/include/ethosu_driver.h": "/* driver */\n"})  # fmt: skip
    tarball(folder / "cmsis-core-v6.3.0.tar.gz",
            {"CMSIS_6/CMSIS/Core/Include/core_cm55.h": "/* cmsis */\n"})  # fmt: skip
    return folder


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch) -> Path:
    for name in SOURCE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ETU_NO_DOWNLOAD", "1")
    monkeypatch.setenv("ETU_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_mirror_is_shared_vendor_in_or_beside_a_checkout(clean_env: Path) -> None:
    checkout = clean_env / "work" / "main"
    checkout.mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'etu'\n")
    assert source_mirror(checkout) is None
    beside = clean_env / "work" / "shared" / "vendor"
    beside.mkdir(parents=True)
    assert source_mirror(checkout) == beside  # ../shared/vendor, as .ci/run reads it
    inside = checkout / "shared" / "vendor"
    inside.mkdir(parents=True)
    assert source_mirror(checkout) == inside
    installed = clean_env / "site-packages" / "etu"  # a wheel: no checkout, no mirror
    (installed.parent / "shared" / "vendor").mkdir(parents=True)
    installed.mkdir()
    assert source_mirror(installed) is None


def test_the_variable_names_the_mirror_or_turns_it_off(clean_env: Path, monkeypatch) -> None:
    mirror = fake_mirror(clean_env / "mirror")
    monkeypatch.setenv(ENV_MIRROR, str(mirror))
    assert source_mirror() == mirror
    monkeypatch.setenv(ENV_MIRROR, "")
    assert source_mirror() is None
    monkeypatch.setenv(ENV_MIRROR, str(clean_env / "nowhere"))
    with pytest.raises(SourceError, match=f"nowhere: no such folder \\({ENV_MIRROR}\\)"):
        source_mirror()


def test_the_source_and_its_companions_come_from_the_mirror(clean_env: Path, monkeypatch):
    mirror = fake_mirror(clean_env / "mirror")
    monkeypatch.setenv(ENV_MIRROR, str(mirror))
    source = find_executorch(clean_env, online=False)
    assert source.origin == "mirror" and source.root.name == "executorch"
    assert source.given == str(mirror / MIRROR_EXECUTORCH.replace("*", "abcdef12"))
    # an ExecuTorch checkout named by the variable: the driver and CMSIS still come from
    # the mirror (before, only archives beside an ExecuTorch tarball were looked at)
    monkeypatch.setenv(ENV_SOURCE, str(source.root))
    checkout = find_executorch(clean_env, online=False)
    assert checkout.origin == "env"
    driver = find_sibling(checkout, ENV_DRIVER, "ethos-u-core-driver*.tar.gz",
                          "include/ethosu_driver.h")  # fmt: skip
    cmsis = find_sibling(checkout, ENV_CMSIS, "cmsis-core*.tar.gz", "CMSIS/Core/Include")
    assert driver is not None and (driver / "include" / "ethosu_driver.h").is_file()
    assert cmsis is not None and (cmsis / "CMSIS" / "Core" / "Include").is_dir()


def test_this_checkouts_mirror_is_found_with_no_variable_set(clean_env: Path) -> None:
    """What `make run` and `etu serve` get: the project's own shared/vendor/, no export."""
    mirror = source_mirror()
    if mirror is None or not list(mirror.glob(MIRROR_EXECUTORCH)):
        pytest.skip(f"no shared/vendor/ beside {CHECKOUT}")
    source = find_executorch(clean_env, online=False)
    assert source.origin == "mirror" and Path(source.given).parent == mirror
    assert (source.root / "runtime").is_dir()


def test_no_source_anywhere_is_one_line_naming_every_way(tmp_path: Path) -> None:
    result = etu("firmware", "build", DEMO / "demo_cnn_cpu.pte", "--board", "qemu-an547",
                 "--out", tmp_path / "fw", cwd=tmp_path, drop=SOURCE_VARIABLES,
                 env={ENV_MIRROR: "", "ETU_NO_DOWNLOAD": "1",
                      "ETU_BUILD_CACHE": str(tmp_path / "cache"),
                      "XDG_CONFIG_HOME": str(tmp_path / "config")})  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    for way in (ENV_SOURCE, "executorch_src", ENV_MIRROR, "download"):
        assert way in lines[0]
