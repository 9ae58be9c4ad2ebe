"""A source archive is unpacked once into the build cache, and a second build that asks
for it meanwhile waits for that tree instead of replacing it under the first build (which
then found its kernel sources gone: "No such file … op_addmm.cpp" on a fresh cache)."""

from __future__ import annotations

import io
import tarfile
import threading
from pathlib import Path

import pytest

from etu.runner import runtime_source
from etu.runner.runtime_source import _unpack


def _archive(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        data = b"// a kernel\n"
        info = tarfile.TarInfo("executorch-0123abc/kernels/portable/cpu/op_addmm.cpp")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def test_a_second_unpack_waits_for_the_first_and_keeps_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETU_BUILD_CACHE", str(tmp_path / "cache"))
    archive = _archive(tmp_path / "executorch-src-0123abc.tar.gz")
    extracted: list[Path] = []
    second: list[Path] = []
    waited: list[bool] = []
    original = tarfile.TarFile.extractall

    def extract_then_ask_again(self, path, *args, **kwargs):
        original(self, path, *args, **kwargs)
        extracted.append(Path(path))
        if len(extracted) == 1:  # another build asks while the first is unpacking
            other = threading.Thread(target=lambda: second.append(_unpack(archive)))
            other.start()
            other.join(timeout=1.0)
            waited.append(other.is_alive())
            threads.append(other)

    threads: list[threading.Thread] = []
    monkeypatch.setattr(tarfile.TarFile, "extractall", extract_then_ask_again)
    first = _unpack(archive)
    for thread in threads:
        thread.join(timeout=10)
    assert waited == [True], "the second unpack did not wait for the first"
    assert len(extracted) == 1, "the archive was unpacked twice"
    assert second == [first]
    assert (first / "executorch-0123abc/kernels/portable/cpu/op_addmm.cpp").is_file()


def test_an_executorch_archive_is_named_executorch_before_it_is_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETU_BUILD_CACHE", str(tmp_path / "cache"))
    archive = tmp_path / "executorch-src-0123abc.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("runtime/core/x.h", "CMakeLists.txt"):
            info = tarfile.TarInfo(f"executorch-0123abc/{name}")
            tar.addfile(info, io.BytesIO(b""))
    source = runtime_source._from_path(archive, "env", str(archive))
    assert source.root.name == "executorch" and (source.root / "runtime").is_dir()
    assert (source.root.parent / ".etu-unpacked").is_file()
