"""The shipped demo and what a compile keeps name no folder of the machine that made them
(#24 §7): no tracked file under etu_tui/demo/ holds an absolute path of a build machine
(the saved float model's archive members read too), and the compile record, the saved
float model's stack traces and Vela's captured report are written without one."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path, PurePath

import pytest

from etu.runner.aot import neutral_path, neutral_source, neutral_vela_stdout

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
MACHINE_FOLDERS = (b"/tmp/", b"/home/", b"/work/", b"/root/")


def tracked_demo_files() -> list[Path]:
    """The demo's files as the repository holds them (a `make run` leaves .etu/ beside)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", "etu_tui/demo"],
            cwd=ROOT, capture_output=True, check=True, timeout=30,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):  # a copy without git: the package files
        return [p for p in DEMO.rglob("*") if p.is_file()
                and not {".etu", "__pycache__"} & set(p.relative_to(DEMO).parts)]  # fmt: skip
    return [ROOT / name for name in listed.decode().split("\0") if name]


def machine_folders_in(data: bytes) -> list[str]:
    return [folder.decode() for folder in MACHINE_FOLDERS if folder in data]


def test_no_tracked_demo_file_names_a_folder_of_a_build_machine() -> None:
    files = tracked_demo_files()
    assert any(f.name == "etu_float_model.pt2" for f in files), files
    found = {}
    for path in files:
        data = path.read_bytes()
        hits = machine_folders_in(data)
        if data[:4] == b"PK\x03\x04":  # a zip (the .pt2): its members, inflated
            with zipfile.ZipFile(path) as archive:
                for member in archive.namelist():
                    hits += machine_folders_in(archive.read(member))
        if hits:
            found[str(path.relative_to(ROOT))] = sorted(set(hits))
    assert found == {}


def test_the_demo_record_names_its_model_by_file_name() -> None:
    import json

    record = json.loads((DEMO / "vela" / "etu_compile.json").read_text("utf-8"))
    assert record["float_model"]["source"] == "model.py:DemoCNN"
    assert (DEMO / "model.py").is_file()
    assert (DEMO / "vela" / record["float_model"]["file"]).is_file()
    assert (DEMO / "vela" / record["float_model"]["program"]).is_file()


@pytest.mark.parametrize(
    ("source", "recorded"),
    [
        ("/work/main/etu_tui/demo/model.py:DemoCNN", "model.py:DemoCNN"),
        ("models/net.py", "net.py"),
        ("/home/me/exported.pt2", "exported.pt2"),
        ("cnn", "cnn"),  # a built-in example
        (None, None),
    ],
)
def test_neutral_source(source: str | None, recorded: str | None) -> None:
    assert neutral_source(source) == recorded


def test_neutral_path() -> None:
    model = Path("/home/me/project")
    assert neutral_path("/home/me/project/nets/model.py", model) == "nets/model.py"
    torch_file = "/work/main/.venv/lib/python3.11/site-packages/torch/nn/modules/conv.py"
    assert neutral_path(torch_file, model) == "torch/nn/modules/conv.py"
    assert neutral_path("/usr/lib/python3/dist-packages/numpy/core.py", None) == "numpy/core.py"
    assert neutral_path("/opt/elsewhere/helpers.py", model) == "helpers.py"
    assert neutral_path("<eval_with_key>.3", model) == "<eval_with_key>.3"


def test_neutral_vela_stdout_names_the_intermediates_folder_by_its_name() -> None:
    scratch = Path("/tmp/job/out/DemoCNN-1234.partial/vela.intermediates")
    text = f"Performance for NPU Grap {scratch}/output/out\nrest\n"
    assert neutral_vela_stdout(text, scratch) == (
        "Performance for NPU Grap vela.intermediates/output/out\nrest\n"
    )
    assert neutral_vela_stdout(text, None) == text


def test_neutral_stack_traces_rewrite_each_node(tmp_path: Path) -> None:
    """On a real torch.export program: the frames of a model file in ``tmp_path`` read
    relative to it, torch's from the package down; the program still runs the same."""
    torch = pytest.importorskip("torch")
    from etu.runner.aot import neutral_stack_traces

    model_file = tmp_path / "tiny_model.py"
    model_file.write_text(
        "import torch\n\n\nclass Tiny(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return torch.relu(self.fc(x))\n"
    )
    namespace: dict = {}
    exec(compile(model_file.read_text(), str(model_file), "exec"), namespace)
    torch.manual_seed(0)
    exported = torch.export.export(namespace["Tiny"]().eval(), (torch.ones(1, 4),))
    traces = [n.meta.get("stack_trace") for n in exported.graph_module.graph.nodes]
    assert any(t and str(tmp_path) in t for t in traces), traces
    assert neutral_stack_traces(exported, tmp_path) > 0
    traces = [n.meta.get("stack_trace") or "" for n in exported.graph_module.graph.nodes]
    assert not any(str(tmp_path) in t or str(PurePath(torch.__file__).parent) in t
                   for t in traces)  # fmt: skip
    assert any('File "tiny_model.py"' in t for t in traces), traces
    saved = tmp_path / "tiny.pt2"
    torch.export.save(exported, saved)
    assert str(tmp_path).encode() not in saved.read_bytes()
    again = torch.export.load(saved).module()(torch.ones(1, 4))
    assert torch.equal(again, exported.module()(torch.ones(1, 4)))
