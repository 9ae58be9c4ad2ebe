"""The target's layers: the integers each CPU layer computed on the target, from a run whose
runner kept its intermediate outputs (``etu firmware build --etdump-intermediates``: the
ETDump and its debug buffer, read with ExecuTorch's Inspector), held against the host's in
``etu compare --layers`` (:mod:`etu.runner.layers`). numpy is imported inside the methods.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from etu.parsers.errors import ParseError

if TYPE_CHECKING:  # runner.layers imports this module: its types only
    from etu.runner.layers import CpuLayer, FloatNode, Layer


class TargetLayers:
    """A run's intermediate outputs (its runner's ETDump debug buffer) by instruction: each
    CPU layer's integers as the target computed them. The NPU's layers are not in it (a
    delegate is one call to the runtime)."""

    def __init__(self, outputs: dict[int, list], source: str) -> None:
        self.outputs = outputs
        self.source = source

    def compare(self, layer: Layer, cpu: CpuLayer, node: FloatNode | None) -> None:
        """Fill ``layer``'s target fields (the SQNR against the float model on the scale
        the host's figures used)."""
        import numpy

        from etu.runner.layer_figures import layer_figures

        found = self.outputs.get(cpu.instruction)
        host = cpu.values
        if not found or numpy.asarray(found[0]).size != host.size:
            return
        values = numpy.asarray(found[0]).reshape(host.shape)
        difference = numpy.abs(values.astype(numpy.int64) - host.astype(numpy.int64))
        layer.target_differing = int(numpy.count_nonzero(difference))
        layer.target_max_lsb = int(difference.max()) if difference.size else 0
        if layer.scale is not None and node is not None and node.value.size == host.size:
            floats = node.value.reshape(host.shape)
            layer.target_sqnr_db = layer_figures(values, cpu.zero_point, floats,
                                                 layer.scale)["sqnr_db"]  # fmt: skip

    def summary(self, layers: list[Layer]) -> dict:
        cpu = [layer for layer in layers if layer.unit == "CPU"]
        read = [layer for layer in cpu if layer.target_differing is not None]
        exact = sum(1 for layer in read if layer.target_differing == 0)
        return {"source": self.source, "cpu_layers": len(cpu), "read": len(read),
                "exact": exact,
                "note": "NPU layers are not in a runner's ETDump: a delegate is one call"
                if len(cpu) < len(layers) else None}  # fmt: skip


NO_INTERMEDIATES = (
    "the run kept no intermediate outputs: build its runner with etu firmware build "
    "--etdump-intermediates to compare the target layer by layer"
)


def session_target(session: Path) -> TargetLayers | None:
    """The intermediate outputs a session's runner printed (ETDump with its debug buffer),
    None when it printed none. Raises LayersError when they cannot be read."""
    from etu.parsers.files import read_regular
    from etu.runner.etdump import ETDUMP_CAP, etdump_intermediates, session_debug_buffer
    from etu.runner.layers import LayersError

    found = session_debug_buffer(session)
    if found is None:
        return None
    etdump, debug = found
    try:
        outputs = etdump_intermediates(
            read_regular(etdump, "an ETDump", ETDUMP_CAP),
            read_regular(debug, "an ETDump debug buffer", ETDUMP_CAP),
        )
    except (ParseError, OSError) as error:
        raise LayersError(f"{debug}: {error}") from None
    except Exception as error:  # the Inspector's own error on a damaged file: one line
        raise LayersError(f"{etdump}: the Inspector cannot read it: {type(error).__name__}: "
                          f"{str(error)[:160]}") from None  # fmt: skip
    return TargetLayers(outputs, f"{session.name}/{debug.name} (ETDump intermediate outputs)")


def target_cell(row: dict) -> str | None:
    """A layer's target against the host, for a table: ``= host``, or how many elements
    differ and by how many steps at most (``≠12 ±1``); None when the run kept none."""
    differing = row.get("target_differing")
    if differing is None:
        return None
    return "= host" if differing == 0 else f"≠{differing} ±{row.get('target_max_lsb')}"


def target_verdict(target: dict) -> tuple[str, bool]:
    """The summary's verdict in words, and whether every layer read equals the host."""
    read, exact = target.get("read", 0), target.get("exact", 0)
    if read == exact:
        return "every one equal to the host", True
    return f"{read - exact} differ from the host", False
