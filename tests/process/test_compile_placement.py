"""Programs that do not depend on where they were built (issue 24 §7): the same request
compiled into two output folders gives byte-identical .pte files, and the job still keeps
its debug artifacts (Vela's output, the TOSA graph) in its own vela/ folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.runner.compile_job import CompileJob
from etu.runner.compile_request import CompileRequest

pytestmark = pytest.mark.aot


def test_the_same_request_gives_the_same_bytes_in_any_folder(tmp_path: Path) -> None:
    request = CompileRequest("add")
    results = [CompileJob(request, tmp_path / name, use_cache=False).run()
               for name in ("build", "elsewhere/deeper")]  # fmt: skip
    for result in results:
        assert result.status == "ok", result.message
    first, second = (Path(r.pte).read_bytes() for r in results)
    assert first == second
    for result in results:
        folder = Path(result.pte).parent
        assert str(tmp_path).encode() not in Path(result.pte).read_bytes()
        assert b"intermediates" not in Path(result.pte).read_bytes()
        vela = folder / "vela"
        assert any(vela.glob("*summary*.csv")) and any(vela.glob("*.tosa")), sorted(vela.iterdir())
