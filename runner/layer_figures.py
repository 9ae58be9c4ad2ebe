"""A layer's figures: its integers against its float counterpart (SQNR, cosine, largest
error), on a known scale or the least-squares one, with the float value laid out as the
TOSA tensor is. Pure numpy, shared by the host comparison (:mod:`etu.runner.layers`) and the
target's own integers (:mod:`etu.runner.target_layers`)."""

from __future__ import annotations

import math


def layer_figures(integers, zero_point: int | None, floats, scale: float | None = None) -> dict:
    """SQNR, cosine and largest error of a layer's integers against its float values, on
    ``scale`` and ``zero_point`` when known, else on the least-squares scale (and offset,
    when the zero point is not known either)."""
    import numpy

    q = integers.astype(numpy.float64).reshape(-1)
    f = floats.astype(numpy.float64).reshape(-1)
    if scale is not None and zero_point is not None:
        centred = q - zero_point
    elif zero_point is None:
        design = numpy.stack([q, numpy.ones_like(q)], axis=1)
        (scale, offset), *_ = numpy.linalg.lstsq(design, f, rcond=None)
        zero = -offset / scale if scale else 0.0
        zero_point = round(zero)
        centred = q - zero
    else:
        centred = q - zero_point
        norm = float(centred @ centred)
        scale = float(centred @ f) / norm if norm else 0.0
    dequantised = centred * scale
    error = f - dequantised
    signal, noise = float(f @ f), float(error @ error)
    sqnr = None if noise == 0 else (10 * math.log10(signal / noise) if signal else None)
    norms = math.sqrt(signal * float(dequantised @ dequantised))
    cosine = float(f @ dequantised) / norms if norms else None
    return {
        "scale": float(scale),
        "zero_point": zero_point,
        "sqnr_db": sqnr,
        "cosine": cosine,
        "max_abs_error": float(numpy.abs(error).max()) if error.size else 0.0,
    }


def float_layout(value, shape: tuple[int, ...]):
    """The float value in the TOSA tensor's layout, None when it cannot be: a 4-D
    activation is NHWC in an Ethos-U graph (NCHW in PyTorch), even when both read alike."""
    if value.ndim == 4 and len(shape) == 4:
        nhwc = value.transpose(0, 2, 3, 1)
        if tuple(nhwc.shape) == shape:
            return nhwc
    if tuple(value.shape) == shape:
        return value
    if value.size == math.prod(shape):
        return value.reshape(shape)
    return None
