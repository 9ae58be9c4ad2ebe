"""The NPU's regions on the host: copies of the board memory a request names, and feature
maps read from and written to them tile by tile, every element's offset bounds-checked.

The Ethos-U model (:mod:`etu.runner.npu_model`) executes operations on these copies; the
written ones go back to the board.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from etu.parsers.ethosu_commands import FeatureMap
from etu.runner.npu_bridge import BoardMemory, BridgeError, InvokeRequest

DTYPES = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
          "int32": np.int32}  # fmt: skip


@dataclass(slots=True)
class Regions:
    """Host copies of the request's regions; the written ones go back to the board. Regions
    whose base addresses overlap (a runner may pass one buffer twice) share one copy."""

    memory: BoardMemory
    request: InvokeRequest
    data: dict[int, np.ndarray] = field(default_factory=dict)
    spans: dict[int, tuple[int, np.ndarray]] = field(default_factory=dict)  # start → copy
    written: set[int] = field(default_factory=set)  # starts of written spans
    shram: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    # what the operations read from and wrote to the regions (feature map elements, weight
    # and scale streams, DMA), each element once per operation; SHRAM is not counted
    bytes_read: int = 0
    bytes_written: int = 0

    def region(self, number: int, what: str) -> np.ndarray:
        found = self.data.get(number)
        if found is None:
            if number >= len(self.request.bases):
                raise BridgeError(f"{what}: region {number} has no base address (the invoke "
                                  f"passed {len(self.request.bases)})")  # fmt: skip
            base = self.request.bases[number]
            start, copy = self._span(base.address, base.size, f"{what} region {number}")
            offset = base.address - start
            found = self.data[number] = copy[offset : offset + base.size]
        return found

    def _span(self, address: int, size: int, what: str) -> tuple[int, np.ndarray]:
        """The copy of the DDR holding [address, address + size): the union of every base
        that overlaps it, read once."""
        start, end = address, address + size
        grown = True
        while grown:
            grown = False
            for base in self.request.bases:
                low, high = base.address, base.address + base.size
                overlaps = base.size > 0 and low < end and start < high
                if overlaps and (low < start or high > end):
                    start, end, grown = min(start, low), max(end, high), True
        if start not in self.spans:
            raw = self.memory.read(start, end - start, what)
            self.spans[start] = (end - start, np.frombuffer(raw, np.uint8).copy())
        return start, self.spans[start][1]

    def _slice(self, number: int, offset: int, size: int, what: str) -> np.ndarray:
        data = self.region(number, what)
        if offset < 0 or size < 0 or offset + size > data.size:
            raise BridgeError(f"{what}: {size} B at offset {offset:#x} is outside region "
                              f"{number} ({data.size} B)")  # fmt: skip
        return data[offset : offset + size]

    def read(self, number: int, offset: int, size: int, what: str) -> np.ndarray:
        found = self._slice(number, offset, size, what)
        self.bytes_read += size
        return found

    def write(self, number: int, offset: int, values: np.ndarray, what: str) -> None:
        self._slice(number, offset, values.size, what)[:] = values
        self.bytes_written += values.size
        self.mark_written(number)

    def mark_written(self, number: int) -> None:
        base = self.request.bases[number]
        self.written.add(next(start for start, (size, _) in self.spans.items()
                              if start <= base.address < start + max(size, 1)))  # fmt: skip

    def flush(self) -> None:
        for start in sorted(self.written):
            self.memory.write(start, self.spans[start][1].tobytes(), "the NPU's regions")


def element_offsets(fm: FeatureMap, height: int, width: int, depth: int) -> np.ndarray:
    """Byte offset in its region of each element (y, x, c) of ``fm`` (shape H×W×C), across
    its tiles: 0 top left, 1 top right (x ≥ width0), 2 bottom left (y ≥ height0), 3 bottom
    right (tile 1 is height1 rows high)."""
    ys = np.arange(height, dtype=np.int64)[:, None]
    xs = np.arange(width, dtype=np.int64)[None, :]
    right = xs >= fm.tile_width0
    bottom = np.where(right, ys >= fm.tile_height1, ys >= fm.tile_height0)
    tile = right.astype(np.int64) + 2 * bottom
    row = ys - np.where(bottom, np.where(right, fm.tile_height1, fm.tile_height0), 0)
    col = xs - np.where(right, fm.tile_width0, 0)
    bases = np.asarray(fm.bases, dtype=np.int64)
    # As Vela addresses a map (register_command_stream_util.get_address): STRIDE_C is the
    # stride of NHCWB16's 16-channel bricks, whose x stride is one brick row; in NHWC the
    # channels are adjacent whatever STRIDE_C says (a transpose through a reshaped int32
    # map sets it to 4 on an int8 map).
    stride_x = 16 * fm.element_size if fm.layout == "NHCWB16" else fm.stride_x
    spatial = bases[tile] + row * fm.stride_y + col * stride_x
    cs = np.arange(depth, dtype=np.int64)
    if fm.layout == "NHCWB16":
        channel = (cs // 16) * fm.stride_c + (cs % 16) * fm.element_size
    else:
        channel = cs * fm.element_size
    return spatial[:, :, None] + channel[None, None, :]


def read_feature_map(
    regions: Regions, fm: FeatureMap, shape: tuple[int, int, int], what: str
) -> np.ndarray:
    """The H×W×C elements of ``fm``, as int64."""
    data = regions.region(fm.region, what)
    offsets = element_offsets(fm, *shape)
    size = fm.element_size
    _check_offsets(offsets, size, data.size, fm.region, what)
    regions.bytes_read += offsets.size * size
    dtype = np.dtype(DTYPES[fm.dtype]).newbyteorder("<")
    if size == 1:
        return data[offsets].view(dtype).astype(np.int64)
    gathered = np.ascontiguousarray(data[offsets[..., None] + np.arange(size)])
    return gathered.view(dtype)[..., 0].astype(np.int64)


def write_feature_map(regions: Regions, fm: FeatureMap, values: np.ndarray, what: str) -> None:
    data = regions.region(fm.region, what)
    offsets = element_offsets(fm, *values.shape)
    size = fm.element_size
    _check_offsets(offsets, size, data.size, fm.region, what)
    raw = np.ascontiguousarray(values.astype(np.dtype(DTYPES[fm.dtype]).newbyteorder("<")))
    regions.bytes_written += values.size * size
    if size == 1:
        data[offsets] = raw.view(np.uint8)
    else:
        data[offsets[..., None] + np.arange(size)] = raw.view(np.uint8).reshape(*values.shape, size)
    regions.mark_written(fm.region)


def _check_offsets(offsets: np.ndarray, size: int, limit: int, region: int, what: str) -> None:
    if offsets.size and (int(offsets.min()) < 0 or int(offsets.max()) + size > limit):
        raise BridgeError(f"{what}: elements from {int(offsets.min()):#x} to "
                          f"{int(offsets.max()) + size:#x} are outside region {region} "
                          f"({limit} B)")  # fmt: skip
