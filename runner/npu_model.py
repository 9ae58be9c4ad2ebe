"""The start of a functional model of the Ethos-U55 (issue 23 §2): it runs a delegate's
decoded NPU operations on byte regions, as the NPU would, without an FVP.

Modelled so far: DMA (1-D copies between regions), the waits (no-ops: operations run in
stream order) and pooling (max, average, sum) on NHWC and NHCWB16 feature maps of 8-, 16-
and 32-bit elements, with padding, strides, the global OFM scale and the activation clamp.
That covers the 1×1 moves Vela uses to transpose a delegate's input and the pools of the
test programs. Convolutions, depthwise convolutions and elementwise operations raise
:class:`NotModelled` (weights need ``ethosu.mlw_codec.decode`` and Vela's brick order).

Regions follow the driver's base addresses: 0 the weights (read-only), 1 the scratch
(the runner's temp pool, inputs and outputs inside it), 2 the fast scratch, 3 the SHRAM LUT.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping

import numpy as np

from etu.parsers.ethosu_commands import FeatureMap, NpuOperation

DTYPES = {
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32,
}  # fmt: skip
BRICK = 16  # channels per NHCWB16 brick


class NotModelled(Exception):
    """An operation the model does not run yet (one line, naming it)."""


class ModelError(Exception):
    """An operation that reaches outside its region (the stream or the regions are wrong)."""


class NpuMemory:
    """The regions an inference sees, by base-address index."""

    def __init__(self, regions: MutableMapping[int, bytearray]) -> None:
        self.regions = regions

    def region(self, number: int, what: str) -> bytearray:
        if number not in self.regions:
            raise ModelError(f"{what}: region {number} was not given to the model")
        return self.regions[number]

    def addresses(self, fm: FeatureMap, what: str) -> np.ndarray:
        """Byte address of every element of ``fm`` (H, W, C), tiles included."""
        h = np.arange(fm.height)[:, None, None]
        w = np.arange(fm.width)[None, :, None]
        c = np.arange(fm.depth)[None, None, :]
        size = fm.element_size
        if fm.layout == "NHCWB16":
            channel = (c // BRICK) * fm.stride_c + (c % BRICK) * size
        else:
            channel = c * fm.stride_c
        lower = h >= fm.tile_height0
        right = w >= fm.tile_width0
        tile = lower.astype(np.int64) * 2 + right.astype(np.int64)
        bases = np.asarray(fm.bases, dtype=np.int64)[tile]
        row = np.where(lower, h - fm.tile_height0, h)
        column = np.where(right, w - fm.tile_width0, w)
        address = bases + row * fm.stride_y + column * fm.stride_x + channel
        region = self.region(fm.region, what)
        if address.size and (address.min() < 0 or address.max() + size > len(region)):
            raise ModelError(f"{what} reaches past region {fm.region} ({len(region):,} B)")
        return address

    def read(self, fm: FeatureMap, what: str) -> np.ndarray:
        """``fm`` as an (H, W, C) array of its dtype."""
        address = self.addresses(fm, what)
        region = np.frombuffer(self.region(fm.region, what), dtype=np.uint8)
        size = fm.element_size
        raw = np.stack([region[address + i] for i in range(size)], axis=-1)
        return raw.copy().view(np.dtype(DTYPES[fm.dtype]).newbyteorder("<"))[..., 0]

    def write(self, fm: FeatureMap, values: np.ndarray, what: str) -> None:
        address = self.addresses(fm, what)
        region = np.frombuffer(self.region(fm.region, what), dtype=np.uint8)
        data = np.ascontiguousarray(values.astype(DTYPES[fm.dtype]).astype(
            np.dtype(DTYPES[fm.dtype]).newbyteorder("<"))).view(np.uint8)  # fmt: skip
        data = data.reshape(*values.shape, fm.element_size)
        for i in range(fm.element_size):
            region[address + i] = data[..., i]


def run_operations(memory: NpuMemory, operations: Iterable[NpuOperation]) -> None:
    """Run ``operations`` in stream order on ``memory``."""
    for op in operations:
        run_operation(memory, op)


def run_operation(memory: NpuMemory, op: NpuOperation) -> None:
    if op.kind in ("dma_wait", "kernel_wait", "pmu_mask", "irq"):
        return  # the model runs each operation to completion, in order
    if op.kind == "dma":
        _dma(memory, op)
    elif op.kind == "pool":
        _pool(memory, op)
    else:
        raise NotModelled(f"operation {op.index} ({op.command}, {op.kind}) is not modelled yet")


def _dma(memory: NpuMemory, op: NpuOperation) -> None:
    dma = op.dma
    assert dma is not None
    if dma.source_stride_mode != "1d" or dma.destination_stride_mode != "1d":
        raise NotModelled(f"operation {op.index}: 2-D/3-D DMA is not modelled yet")
    src, dst = dma.source, dma.destination
    what = f"operation {op.index} (DMA)"
    source = memory.region(src.region, what)
    target = memory.region(dst.region, what)
    if src.offset + src.length > len(source) or dst.offset + dst.length > len(target):
        raise ModelError(f"{what}: {src.length:,} B do not fit their regions")
    target[dst.offset : dst.offset + dst.length] = source[src.offset : src.offset + src.length]


def _pool(memory: NpuMemory, op: NpuOperation) -> None:
    ifm_map, ofm_map, kernel = op.ifm, op.ofm, op.kernel
    assert ifm_map is not None and ofm_map is not None and kernel is not None
    what = f"operation {op.index} (pool {op.mode})"
    if op.upscale not in (None, "none"):
        raise NotModelled(f"{what}: IFM upscaling is not modelled yet")
    ifm = memory.read(ifm_map, what + " IFM").astype(np.int64) - ifm_map.zero_point
    pad_value = np.iinfo(np.int64).min if op.mode == "max" else 0
    padded = np.pad(
        ifm,
        ((kernel.pad_top, kernel.pad_bottom), (kernel.pad_left, kernel.pad_right), (0, 0)),
        constant_values=pad_value,
    )
    out = np.empty((ofm_map.height, ofm_map.width, ofm_map.depth), dtype=np.int64)
    for y in range(ofm_map.height):
        for x in range(ofm_map.width):
            top, left = y * kernel.stride_y, x * kernel.stride_x
            window = padded[top : top + kernel.height * kernel.dilation_y : kernel.dilation_y,
                            left : left + kernel.width * kernel.dilation_x : kernel.dilation_x,
                            : ofm_map.depth]  # fmt: skip
            out[y, x] = window.max(axis=(0, 1)) if op.mode == "max" else window.sum(axis=(0, 1))
    if op.ofm_scale is not None and op.mode != "max":
        out = rescale(out, op.ofm_scale.scale, op.ofm_scale.shift, op.rounding or "tfl")
    out = out + ofm_map.zero_point
    if op.activation is not None:
        out = np.clip(out, op.activation.minimum, op.activation.maximum)
    info = np.iinfo(DTYPES[ofm_map.dtype])
    memory.write(ofm_map, np.clip(out, info.min, info.max), what + " OFM")


def rescale(values: np.ndarray, scale: int, shift: int, rounding: str) -> np.ndarray:
    """``values × scale / 2^shift``, rounded as the OFM precision register says: natural
    (half up), truncate (toward zero) or tfl (half away from zero)."""
    product = values.astype(object) * scale  # Python ints: no 64-bit overflow
    if shift == 0:
        return np.asarray(product, dtype=np.int64)
    half = 1 << (shift - 1)
    if rounding == "natural":
        result = [(v + half) >> shift for v in product.flat]
    elif rounding == "truncate":
        result = [(v >> shift) if v >= 0 else -((-v) >> shift) for v in product.flat]
    else:
        result = [((v + half) >> shift) if v >= 0 else -((-v + half) >> shift)
                  for v in product.flat]  # fmt: skip
    return np.asarray(result, dtype=np.int64).reshape(values.shape)
