"""Resize (and Upsample, which onnx's version converter brings up to Resize): separable, so
each resized axis is one `dot_general` with an (out x in) interpolation matrix built at import
with numpy, from the mode's coefficients as ONNX's reference implementation
(onnx/reference/ops/op_resize.py) computes them: one-hot rows for nearest, two weights per
row for linear, four (Keys' cubic convolution, coefficient `cubic_coeff_a`) for cubic, the
source indices clamped to the edge; with antialias, linear and cubic kernels stretched by
1 / scale when downsampling. tf_crop_and_resize's outputs outside the input take
extrapolation_value: their rows are zero and a constant adds the value there."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...dtypes import is_float, numpy_dtype
from ...ir import Value
from .registry import Context, Node, Operand, converter, one_of
from .shared import broadcast_to, normalized_axis

# tf_half_pixel_for_nn left the spec at opset 13, but tf2onnx still writes it for TensorFlow's
# nearest resize at every opset, and ONNX Runtime accepts it.
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize", "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


def source_coordinates(mode: str, out_size: int, in_size: int, scale: float,
                       roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Where each output index falls in the input, by `coordinate_transformation_mode`, computed
    in float32 as ONNX Runtime computes it (so a nearest pick on a rounding edge, such as
    1.5 / 0.6, agrees with it). align_corners and pytorch_half_pixel's length_resized is the
    integral output size, as in ONNX Runtime and PyTorch (the reference implementation takes
    scale * in_size, which differs when that is fractional); so is tf_crop_and_resize's, the
    crop `roi` (start, end) a fraction of the axis."""
    y = np.arange(out_size, dtype=np.float32)
    factor, half = np.float32(scale), np.float32(0.5)
    if mode == "tf_crop_and_resize":  # in float64 from float32 roi, as ONNX Runtime
        start, end = (float(np.float32(r)) for r in roi)
        if out_size == 1:
            return np.full(1, 0.5 * (start + end) * (in_size - 1), np.float32)
        return (start * (in_size - 1) + y.astype(np.float64) * (end - start) * (in_size - 1) / (out_size - 1)).astype(np.float32)
    if mode == "align_corners":
        return np.zeros(out_size, np.float32) if out_size == 1 else y * np.float32(in_size - 1) / np.float32(out_size - 1)
    if mode == "asymmetric":
        return y / factor
    if mode == "tf_half_pixel_for_nn":  # opset 11's: half_pixel without the final - 0.5
        return (y + half) / factor
    if mode == "pytorch_half_pixel" and out_size == 1:
        return np.zeros(out_size, np.float32)
    if mode == "half_pixel_symmetric":  # half_pixel, centred when the scale's width is fractional
        adjustment = np.float32(out_size / (scale * in_size))
        offset = np.float32(in_size / 2) * (np.float32(1) - adjustment)
        return offset + (y + half) / factor - half
    return (y + half) / factor - half  # half_pixel, pytorch_half_pixel


def _keys_inner(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic kernel at distance t <= 1."""
    return ((a + 2) * t - (a + 3)) * t * t + 1


def _keys_outer(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic kernel at distance 1 < t < 2."""
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a


def cubic_weights(ratio: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weights of the four taps around each source coordinate (the
    reference's `_cubic_coeffs`): `ratio` in (0, 1] is its distance from the second tap."""
    return np.stack([_keys_outer(ratio + 1, a), _keys_inner(ratio, a), _keys_inner(1 - ratio, a), _keys_outer(2 - ratio, a)],
                    axis=1)


def _cubic_matrix(x: np.ndarray, in_size: int, a: float, exclude_outside: bool) -> np.ndarray:
    """Rows of four cubic weights on the taps base - 1 .. base + 2, base the tap left of x (x
    itself minus 1 when integral: the ratio is in (0, 1], as the reference has it); with
    `exclude_outside` the taps outside the input weigh 0 and each row is renormalized."""
    base = np.ceil(x) - 1
    weights = cubic_weights(x - base, a)
    taps = base.astype(np.int64)[:, None] + np.arange(-1, 3)
    if exclude_outside:
        weights = np.where((taps >= 0) & (taps < in_size), weights, 0.0)
        weights /= weights.sum(axis=1, keepdims=True)
    return _tap_matrix(weights, taps, in_size)


def _tap_matrix(weights: np.ndarray, taps: np.ndarray, in_size: int) -> np.ndarray:
    """The (rows, in_size) matrix with each row's `weights` added at its `taps`, clamped to the edge."""
    rows = np.repeat(np.arange(len(taps)), taps.shape[1])
    matrix = np.zeros((len(taps), in_size))
    np.add.at(matrix, (rows, np.clip(taps, 0, in_size - 1).reshape(-1)), weights.reshape(-1))
    return matrix


def _antialias_matrix(mode: str, x: np.ndarray, in_size: int, scale: float, a: float, exclude_outside: bool) -> np.ndarray:
    """Rows of the linear (triangle) or cubic (Keys) kernel stretched by 1 / scale when
    downsampling (scale < 1; as is otherwise), each normalized to sum 1, as the reference's
    `_linear_coeffs_antialias` and `_cubic_coeffs_antialias` weigh the taps around x (the
    ratio in (0, 1] from the tap left of it); with `exclude_outside` the taps outside the
    input weigh 0 and the row is renormalized."""
    stretch = min(scale, 1.0)
    start = int(np.floor((-1.0 if mode == "linear" else -2.0) / stretch)) + 1
    offsets = np.arange(start, 2 - start)
    base = np.ceil(x) - 1
    distance = np.abs(stretch * (offsets[None, :] - (x - base)[:, None]))
    if mode == "linear":
        weights = np.clip(1 - distance, 0, 1)
    else:
        weights = np.where(distance <= 1, _keys_inner(distance, a), np.where(distance < 2, _keys_outer(distance, a), 0.0))
    weights /= weights.sum(axis=1, keepdims=True)
    taps = base.astype(np.int64)[:, None] + offsets
    if exclude_outside:
        weights = np.where((taps >= 0) & (taps < in_size), weights, 0.0)
        weights /= weights.sum(axis=1, keepdims=True)
    return _tap_matrix(weights, taps, in_size)


def interpolation_matrix(mode: str, coordinate_mode: str, nearest_mode: str, out_size: int, in_size: int,
                         scale: float, cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False,
                         roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The (out_size, in_size) float64 matrix taking an axis of the input to the resized one:
    nearest picks floor or floor + 1 of each source coordinate by `nearest_mode` (an integral
    coordinate itself); linear weighs them 1 - r and r (r the fractional part); cubic weighs
    four taps (`_cubic_matrix`); antialiased linear and cubic weigh more (`_antialias_matrix`).
    Indices past either end take the edge element, as the reference's edge padding does;
    tf_crop_and_resize's rows for coordinates outside the input are zero (`outside`)."""
    x = source_coordinates(coordinate_mode, out_size, in_size, scale, roi)
    matrix = _weights(mode, x.astype(np.float64), nearest_mode, in_size, scale, cubic_a, exclude_outside, antialias)
    if coordinate_mode == "tf_crop_and_resize":
        matrix[outside(x, in_size)] = 0.0
    return matrix


def outside(x: np.ndarray, in_size: int) -> np.ndarray:
    """Which source coordinates fall outside the input (tf_crop_and_resize extrapolates there)."""
    return (x < 0) | (x > np.float32(in_size - 1))


def _weights(mode: str, x: np.ndarray, nearest_mode: str, in_size: int, scale: float, cubic_a: float,
             exclude_outside: bool, antialias: bool) -> np.ndarray:
    """`interpolation_matrix`'s rows at source coordinates x."""
    out_size = len(x)
    if antialias:
        return _antialias_matrix(mode, x, in_size, scale, cubic_a, exclude_outside)
    if mode == "cubic":
        return _cubic_matrix(x, in_size, cubic_a, exclude_outside)
    low = np.floor(x)
    ratio = x - low
    low = low.astype(np.int64)
    matrix = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if mode == "nearest":
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": np.zeros_like(ratio, bool),
              "ceil": ratio > 0}[nearest_mode]
        matrix[rows, np.clip(low + up, 0, in_size - 1)] = 1.0
        return matrix
    np.add.at(matrix, (rows, np.clip(low, 0, in_size - 1)), 1 - ratio)
    np.add.at(matrix, (rows, np.clip(low + 1, 0, in_size - 1)), ratio)
    return matrix


def _resized_axes(ctx: Context, node: Node, rank: int) -> list[int]:
    """The axes scales and sizes list (opset 18's `axes`; else every axis)."""
    given = node.attrs.get("axes")
    if not given:
        return list(range(rank))
    axes = [normalized_axis(ctx, int(a), rank, "axes") for a in given]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {list(given)} repeat a dimension")
    return axes


def _given(ctx: Context, node: Node, index: int, what: str) -> np.ndarray | None:
    """Input `index` (scales or sizes) as a 1-D array known at import; None when absent or empty."""
    if not node.input(index):
        return None
    array = ctx.required_array(node, index, what).reshape(-1)
    return array if array.size else None


def _sizes_and_scales(ctx: Context, node: Node, shape: Sequence[int]) -> tuple[list[int], list[float]]:
    """Each axis' output size and scale, from scales or from sizes (with keep_aspect_ratio_policy)."""
    rank = len(shape)
    axes = _resized_axes(ctx, node, rank)
    scales, sizes = _given(ctx, node, 2, "scales"), _given(ctx, node, 3, "sizes")
    if (scales is None) == (sizes is None):
        raise ctx.error("exactly one of scales and sizes must be given")
    given = scales if scales is not None else sizes
    assert given is not None
    if given.size != len(axes):
        raise ctx.error(f"{'scales' if scales is not None else 'sizes'} has {given.size} entries, expected {len(axes)}")
    out, factors = list(shape), [1.0] * rank
    if scales is not None:
        for axis, scale in zip(axes, scales.astype(np.float64)):
            if not scale > 0:
                raise ctx.error(f"scale {scale} of axis {axis} is not positive")
            out[axis], factors[axis] = int(scale * shape[axis]), float(scale)
        return out, factors
    wanted = [int(s) for s in sizes]  # type: ignore[union-attr]
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    ratios = [size / shape[axis] for axis, size in zip(axes, wanted)]
    if policy != "stretch":
        common = min(ratios) if policy == "not_larger" else max(ratios)
        for axis in axes:
            out[axis], factors[axis] = int(common * shape[axis] + 0.5), common
        return out, factors
    for axis, size, ratio in zip(axes, wanted, ratios):
        out[axis], factors[axis] = size, ratio
    return out, factors


_RESIZE_VALUES = one_of(mode=("nearest", "linear", "cubic"), coordinate_transformation_mode=COORDINATE_MODES,
                        nearest_mode=NEAREST_MODES, antialias=(0, 1), exclude_outside=(0, 1), keep_aspect_ratio_policy=ASPECT_POLICIES)


def resize_attrs(node: Node) -> str | None:
    """The attribute values the Resize converter handles, refused up front otherwise;
    exclude_outside with cubic mode only (the runtimes differ on it for the others), antialias
    with linear and cubic (as the spec and ONNX Runtime have it)."""
    if (found := _RESIZE_VALUES(node)) is not None:
        return found
    if node.attrs["exclude_outside"] and node.attrs["mode"] != "cubic":
        return f"exclude_outside 1 is supported with mode cubic only, not '{node.attrs['mode']}'"
    if node.attrs.get("antialias") and node.attrs["mode"] == "nearest":
        return "antialias 1 is supported with modes linear and cubic, not 'nearest'"
    return None


def resize_axis(ctx: Context, x: Value, axis: int, matrix: np.ndarray) -> Value:
    """`x` with `axis` taken through `matrix` (out x in): a `dot_general` contracting it (the
    new axis comes last; precision HIGHEST), then a `transpose` putting it back in place."""
    weights = ctx.constant(matrix.astype(numpy_dtype(x.type.dtype)), "interpolation")
    # HIGHEST: a nearest row must copy its element exactly, which a TF32 product on a GPU would not.
    out = ctx.op("dot_general", x, weights, lhs_contracting_dimensions=(axis,), rhs_contracting_dimensions=(1,),
                 precision="HIGHEST")
    last = x.type.rank - 1
    if axis == last:
        return out
    permutation = tuple(d if d < axis else last if d == axis else d - 1 for d in range(x.type.rank))
    return ctx.op("transpose", out, permutation=permutation)


def _crop_regions(ctx: Context, node: Node, rank: int) -> list[tuple[float, float]]:
    """tf_crop_and_resize's (start, end) per axis from roi (starts, then ends, of the axes
    resized); (0, 1), the whole axis, for the other modes and for the axes roi leaves out."""
    regions = [(0.0, 1.0)] * rank
    if node.attrs["coordinate_transformation_mode"] != "tf_crop_and_resize":
        return regions
    roi = _given(ctx, node, 1, "roi")
    axes = _resized_axes(ctx, node, rank)
    if roi is None or roi.size != 2 * len(axes):
        raise ctx.error(f"tf_crop_and_resize needs roi known at import with {2 * len(axes)} entries (a start and an end per axis)")
    for i, axis in enumerate(axes):
        regions[axis] = (float(roi[i]), float(roi[i + len(axes)]))
    return regions


def _extrapolated(ctx: Context, y: Value, masks: dict[int, np.ndarray], value: float) -> Value:
    """`y` plus `value` where any axis' source coordinate was outside the input (their rows
    of the interpolation matrices are zero there): one constant, spread over N and C."""
    shape = [1, 1, *y.type.shape[2:]]
    inside = np.ones(shape[2:], bool)
    for axis, mask in masks.items():
        inside &= ~mask.reshape([-1 if d == axis else 1 for d in range(2, y.type.rank)])
    if value == 0 or inside.all():
        return y
    offset = np.where(inside, 0.0, value).astype(numpy_dtype(y.type.dtype)).reshape(shape)
    return ctx.op("add", y, broadcast_to(ctx, ctx.constant(offset, "extrapolation"), y.type.shape))


@converter("Resize", since=13, attrs=resize_attrs)
def resize(node: Node, ctx: Context) -> Sequence[Operand]:
    """Per resized spatial axis, a `dot_general` (precision HIGHEST) with an (out x in) interpolation matrix computed
    at import, then a
    `transpose` back: mode nearest (nearest_mode round_prefer_floor, round_prefer_ceil, floor, ceil), linear or
    cubic (cubic_coeff_a, exclude_outside; antialias, opset 18);
    coordinate_transformation_mode half_pixel, pytorch_half_pixel, align_corners, asymmetric, half_pixel_symmetric (opset 19),
    tf_crop_and_resize (roi known at import; extrapolation_value an `add` of a constant where a coordinate is outside),
    tf_half_pixel_for_nn (opset 11's, which tf2onnx writes at any opset, as ONNX Runtime accepts); scales or sizes known
    at import; axes and keep_aspect_ratio_policy (opset 18). N and C keep their size."""
    mode, coordinate_mode, nearest_mode = (node.attrs[name] for name in ("mode", "coordinate_transformation_mode", "nearest_mode"))
    x = ctx.operand(node, 0)
    if not is_float(x.type.dtype):
        raise ctx.error(f"X has element type {x.type.dtype}; Resize interpolates floating tensors")
    out, scales = _sizes_and_scales(ctx, node, x.type.shape)
    regions = _crop_regions(ctx, node, x.type.rank)
    for axis in range(min(2, x.type.rank)):
        if out[axis] != x.type.shape[axis] or scales[axis] != 1 or regions[axis] != (0.0, 1.0):
            raise ctx.error(f"resizing axis {axis} (batch or channels) is not supported: only spatial axes (2 on)")
    y, masks = x, {}
    for axis in range(2, x.type.rank):
        if out[axis] == x.type.shape[axis] and math.isclose(scales[axis], 1.0) and regions[axis] == (0.0, 1.0):
            continue
        if out[axis] < 1:
            raise ctx.error(f"axis {axis} would be resized to {out[axis]} elements")
        matrix = interpolation_matrix(mode, coordinate_mode, nearest_mode, out[axis], x.type.shape[axis], scales[axis],
                                      node.attrs["cubic_coeff_a"], bool(node.attrs["exclude_outside"]),
                                      bool(node.attrs.get("antialias")), regions[axis])
        if coordinate_mode == "tf_crop_and_resize":
            masks[axis] = outside(source_coordinates(coordinate_mode, out[axis], x.type.shape[axis], scales[axis],
                                                     regions[axis]), x.type.shape[axis])
        y = resize_axis(ctx, y, axis, matrix)
    return [_extrapolated(ctx, y, masks, float(node.attrs["extrapolation_value"])) if masks else y]
