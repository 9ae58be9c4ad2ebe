"""ccache's settings for the runner builds: shared objects between build trees."""

from __future__ import annotations

import shlex

from etu.runner import runtime_build
from etu.runner.runtime_build import ccache_settings, rebuild_text


def test_ccache_makes_paths_under_the_build_cache_relative(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ETU_BUILD_CACHE", str(tmp_path))
    monkeypatch.delenv("CCACHE_DIR", raising=False)
    monkeypatch.delenv("ETU_CCACHE", raising=False)
    monkeypatch.setattr(runtime_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    settings = ccache_settings()
    assert settings["CCACHE_BASEDIR"] == str(tmp_path)
    assert settings["CCACHE_DIR"] == str(tmp_path / "ccache")
    monkeypatch.setenv("CCACHE_DIR", "/elsewhere")
    assert ccache_settings()["CCACHE_DIR"] == "/elsewhere"  # the user's own cache wins


def test_no_ccache_when_missing_or_turned_off(monkeypatch) -> None:
    monkeypatch.setattr(runtime_build.shutil, "which", lambda name: None)
    assert ccache_settings() == {}
    monkeypatch.setattr(runtime_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setenv("ETU_CCACHE", "0")
    assert ccache_settings() == {}


def test_the_rebuild_script_carries_the_build_environment(tmp_path) -> None:
    text = rebuild_text(["cmake", "-S", "a b"], ["cmake", "--build", "x"],
                        {"CCACHE_BASEDIR": "/c d"})  # fmt: skip
    lines = text.splitlines()
    assert lines[0] == f"export CCACHE_BASEDIR={shlex.quote('/c d')}"
    assert shlex.split(lines[1]) == ["cmake", "-S", "a b"]
    assert rebuild_text(["cmake"], ["ninja"]) == "cmake\nninja\n"
