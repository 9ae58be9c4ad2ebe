"""Settings precedence: environment > workspace etu.toml > user file > defaults; malformed
files are one-line errors naming file, line and key (the CLI never shows a traceback)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from etu.fvp.discovery import find_fvps
from etu.fvp.launch import prepare_fvp_launch
from etu.fvp.standin import install_standin
from etu.fvp.targets import SSE300_U55
from etu.runner.config import (
    ConfigError,
    load_settings,
    trust_workspace,
    user_config_file,
    workspace_template,
)
from tests.helpers import etu

ROOT = Path(__file__).resolve().parent.parent.parent
ELF = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "user" / "config.toml"
    path.parent.mkdir()
    return path


def test_defaults_without_any_file(tmp_path: Path, user_file: Path) -> None:
    settings = load_settings(tmp_path, env={}, user_file=user_file)
    assert settings.target == "ethos-u55-128" and settings.fvp_dir is None
    assert settings.boards_dir == tmp_path / "boards"
    assert settings.keymap == {} and settings.files == []
    assert str(settings.origin("target")) == "default"


def test_workspace_over_user_over_default_and_env_over_all(tmp_path: Path, user_file) -> None:
    user_file.write_text(
        'target = "ethos-u85-256"\ntheme = "nord"\nfvp_dir = "fvps"\n'
        '[keymap]\nstart_run = "f5"\nnpu = "ctrl+n"\n'
    )
    (tmp_path / "etu.toml").write_text('theme = "gruvbox"\n[keymap]\nstart_run = "f9"\n')
    settings = load_settings(tmp_path, env={}, user_file=user_file)
    assert settings.target == "ethos-u85-256" and settings.origin("target").source == "user"
    assert settings.theme == "gruvbox" and settings.origin("theme").source == "workspace"
    assert settings.origin("theme").detail == str(tmp_path / "etu.toml")
    assert settings.fvp_dir == user_file.parent / "fvps"  # relative to its own file
    assert settings.keymap == {"start_run": "f9", "npu": "ctrl+n"}
    assert settings.origin("keymap.start_run").source == "workspace"
    assert settings.origin("keymap.npu").source == "user"
    assert settings.files == [user_file, tmp_path / "etu.toml"]

    env = {"ETU_FVP_DIR": "/opt/fvp", "ETU_TARGET": "ethos-u55-64", "ETU_STANDIN_FAULT": "x"}
    settings = load_settings(tmp_path, env=env, user_file=user_file)
    assert settings.fvp_dir == Path("/opt/fvp") and str(settings.origin("fvp_dir")) == (
        "env (ETU_FVP_DIR)"
    )
    assert settings.target == "ethos-u55-64"
    assert settings.env == env  # every ETU_ variable is listed, settings or not


@pytest.mark.parametrize(
    ("text", "line", "key", "what"),
    [
        ('target = "ethos-u55-128"\ntheme = \n', 2, None, "not valid TOML"),
        ('theme = "nord"\n\nfvp_dri = "x"\n', 3, "fvp_dri", "did you mean 'fvp_dir'"),
        ("target = 128\n", 1, "target", "must be a string, not int"),
        ('target = "ethos-u99-1"\n', 1, "target", "unknown value"),
        ('theme = "nord"\n[keymap]\n\nstart_run = 5\n', 4, "keymap.start_run", "key string"),
        ('keymap = "f5"\n', 1, "keymap", "must be a table"),
    ],
)
def test_malformed_file_names_file_line_and_key(tmp_path, user_file, text, line, key, what):
    (tmp_path / "etu.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, env={}, user_file=user_file)
    error = caught.value
    assert (error.file, error.line, error.key) == (str(tmp_path / "etu.toml"), line, key)
    assert what in str(error) and str(error).startswith(f"{tmp_path / 'etu.toml'}:{line}: ")


def test_malformed_user_file_and_bad_variable(tmp_path: Path, user_file: Path) -> None:
    user_file.write_text("[keymap\n")
    with pytest.raises(ConfigError, match=rf"^{user_file}:1: not valid TOML"):
        load_settings(tmp_path, env={}, user_file=user_file)
    user_file.write_text("")
    with pytest.raises(ConfigError, match=r"^\$ETU_MEMORY_MODE: memory_mode: unknown value"):
        load_settings(tmp_path, env={"ETU_MEMORY_MODE": "Tiny"}, user_file=user_file)


def test_template_is_valid_and_changes_nothing(tmp_path: Path, user_file: Path) -> None:
    (tmp_path / "etu.toml").write_text(workspace_template())
    settings = load_settings(tmp_path, env={}, user_file=user_file)
    assert settings.files == [tmp_path / "etu.toml"]
    assert all(origin.source != "workspace" for origin in settings.origins.values())


def test_fvp_dir_setting_is_searched_after_the_variable(tmp_path: Path, user_file) -> None:
    install_standin(tmp_path / "fvps")
    (tmp_path / "etu.toml").write_text('fvp_dir = "fvps"\n')
    trust_workspace(tmp_path, user_file.parent)  # a workspace file choosing a simulator
    settings = load_settings(tmp_path, env={}, user_file=user_file)
    launch = prepare_fvp_launch(
        "ethos-u55-128", ELF, env={"PATH": "/nonexistent"}, settings=settings
    )
    assert launch.executable == tmp_path / "fvps" / SSE300_U55
    assert launch.found_via == f"fvp_dir ({tmp_path / 'etu.toml'})"
    other = tmp_path / "other"
    install_standin(other)
    found = find_fvps({"ETU_FVP_DIR": str(other), "PATH": ""}, fvp_dir=settings.fvp_dir)
    assert found[SSE300_U55].path == other / SSE300_U55


def test_config_command_shows_each_origin(tmp_path: Path) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "etu" / "config.toml"
    assert user_config_file() == user
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('theme = "nord"\n')
    (tmp_path / "etu.toml").write_text('target = "ethos-u85-128"\n[keymap]\nquit = "ctrl+q"\n')
    result = etu("config", "--json", cwd=tmp_path, env={"ETU_BOARDS_DIR": "/lab/boards"})
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["settings"]["theme"] == {"value": "nord", "origin": f"user ({user})"}
    assert record["settings"]["target"]["origin"] == f"workspace ({tmp_path / 'etu.toml'})"
    assert record["settings"]["boards_dir"] == {
        "value": "/lab/boards",
        "origin": "env (ETU_BOARDS_DIR)",
    }
    assert record["keymap"]["quit"]["key"] == "ctrl+q"
    assert record["environment"]["ETU_BOARDS_DIR"] == "/lab/boards"
    text = etu("config", cwd=tmp_path).stdout
    assert "theme" in text and f"[user ({user})]" in text and "quit = ctrl+q" in text
    user.write_text("theme = [\n")
    broken = etu("config", cwd=tmp_path)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert broken.stderr.startswith(f"etu: {user}:1: not valid TOML")


def test_init_creates_a_workspace_that_opens(tmp_path: Path) -> None:
    result = etu("init", "ws", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ws = tmp_path / "ws"
    for folder in ("vela", "firmware", "boards", ".etu/sessions"):
        assert (ws / folder).is_dir() and folder.split("/")[0] in result.stdout
    assert "etu.toml" in result.stdout
    (ws / "etu.toml").write_text((ws / "etu.toml").read_text() + 'quit = "ctrl+q"\n')
    again = etu("init", "ws", cwd=tmp_path)
    assert "kept as it was" in again.stdout  # an existing etu.toml is never overwritten
    assert load_settings(ws, env={}).keymap == {"quit": "ctrl+q"}


def test_runtime_source_and_board_profiles_read_the_settings(tmp_path: Path, monkeypatch) -> None:
    from etu.runner.boards.profiles import user_boards_dir
    from etu.runner.runtime_source import find_executorch

    tree = tmp_path / "src" / "executorch"
    (tree / "runtime").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("project(executorch)\n")
    (tmp_path / "etu.toml").write_text('executorch_src = "src/executorch"\nboards_dir = "lab"\n')
    trust_workspace(tmp_path)
    monkeypatch.delenv("ETU_EXECUTORCH_SRC", raising=False)
    monkeypatch.delenv("ETU_BOARDS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    source = find_executorch(tmp_path, online=False)
    assert source.root == tree.resolve() and source.origin == "workspace"
    assert user_boards_dir() == tmp_path / "lab"
    monkeypatch.setenv("ETU_BOARDS_DIR", "/elsewhere")
    assert user_boards_dir() == Path("/elsewhere")


def test_config_warns_about_keymap_ids_the_console_does_not_have(tmp_path: Path) -> None:
    (tmp_path / "etu.toml").write_text(
        '[keymap]\nhistory = "f9"\nsort_sessions = "o"\nstrat_run = "f5"\n'
    )
    result = etu("config", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["keymap"]["sort_sessions"]["key"] == "o"
    assert [w.split(" ")[0] for w in record["warnings"]] == ["keymap.strat_run"]
    text = etu("config", cwd=tmp_path)
    assert "etu: warning: keymap.strat_run" in text.stderr and "sort_sessions" not in text.stderr


# ------------------------------------------------------------------ workspace trust (issue 20.4)


def test_a_workspace_file_cannot_plant_a_simulator_until_trusted(tmp_path: Path) -> None:
    """A cloned workspace's etu.toml with fvp_dir = "tools": `etu run` warns and does not
    use its tools/ until the user trusts that file; a change to the file revokes it."""
    ws = tmp_path / "cloned"
    planted = ws / "tools" / SSE300_U55
    planted.parent.mkdir(parents=True)
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path}/RAN\n")
    planted.chmod(0o755)
    (ws / "etu.toml").write_text('fvp_dir = "tools"\n')
    env = {"ETU_FVP_DIR": "", "PATH": os.environ["PATH"]}
    shown = etu("run", "--dry-run", "--elf", str(ELF), cwd=ws, env=env)
    assert shown.returncode == 0, shown.stderr
    assert str(planted) not in shown.stdout
    (warning,) = [line for line in shown.stderr.splitlines() if "warning" in line]
    assert "fvp_dir" in warning and "etu config trust" in warning and "etu.toml:1" in warning
    real = etu("run", "--elf", str(ELF), "--timelimit", "5", cwd=ws, env=env)
    assert real.returncode != 0 and not (tmp_path / "RAN").exists()
    assert "fvp_dir = 'tools' ignored" in real.stderr

    trusted = etu("config", "trust", str(ws), cwd=tmp_path)
    assert trusted.returncode == 0 and "trusted" in trusted.stdout
    assert str(planted) in etu("run", "--dry-run", "--elf", str(ELF), cwd=ws, env=env).stdout
    (ws / "etu.toml").write_text('fvp_dir = "tools"\n# changed after trusting\n')
    again = etu("run", "--dry-run", "--elf", str(ELF), cwd=ws, env=env)
    assert str(planted) not in again.stdout and "ignored" in again.stderr
    record = json.loads(etu("config", "--json", cwd=ws).stdout)
    assert record["ignored"]["fvp_dir"]["value"] == "tools"
    assert record["settings"]["fvp_dir"]["value"] is None


def test_a_workspace_file_cannot_choose_the_code_a_firmware_build_runs(tmp_path: Path) -> None:
    tree = tmp_path / "src" / "executorch"
    (tree / "runtime").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("execute_process(COMMAND touch RAN)\n")
    (tmp_path / "etu.toml").write_text('executorch_src = "src/executorch"\n')
    program = ROOT / "etu_tui" / "demo" / "demo_cnn_cpu.pte"
    if not program.is_file():
        program = next((ROOT / "etu_tui" / "demo").glob("*.pte"))
    result = etu("firmware", "build", str(program), "--board", "corstone-300", "--out",
                 str(tmp_path / "fw"), cwd=tmp_path,
                 env={"ETU_EXECUTORCH_SRC": "", "ETU_NO_DOWNLOAD": "1"})  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "executorch_src" in result.stderr and "etu config trust" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.rglob("RAN"))


def test_bad_config_arguments_and_deep_files_are_status_2(tmp_path: Path) -> None:
    missing = etu("config", "--workspace", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and "nope" in missing.stderr
    (tmp_path / "etu.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    deep = etu("config", cwd=tmp_path)
    assert deep.returncode == 2 and "nested too deeply" in deep.stderr
    assert "Traceback" not in deep.stderr and "RecursionError" not in deep.stderr
    untrustable = etu("config", "trust", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert untrustable.returncode == 2 and "no such workspace file" in untrustable.stderr
