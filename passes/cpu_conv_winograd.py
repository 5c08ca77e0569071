"""cpu-conv-winograd: a 3x3 stride-1 conv as Winograd's minimal filtering F(2x2, 3x3): 16
batched GEMMs of transformed 4x4 input tiles with the transformed kernel, 2.25x fewer
multiply-adds than the conv.

Every 2x2 block of outputs reads a 4x4 tile of the padded input (tiles 2 apart). The input
transform Bᵀ d B turns each tile into 16 values, each a sum and difference of four of the
tile's (so it is 16 sums of the input's stride-2 slices, one loop); the kernel transform
G g Gᵀ turns the 3x3 kernel into 16 [C, K] matrices (computed here in f64 when the kernel is
a constant, else a dot_general with the constant G ⊗ G); one `dot_general` batched over the 16
tile positions multiplies them; the output transform Aᵀ m A turns each tile's 16 products into
its 2x2 outputs (sums and differences of nine), interleaved back into the output's rows.
Bᵀ and Aᵀ hold only 0 and ±1, and G ⊗ G only 0, ±1/4, ±1/2 and 1, so the transforms add and
subtract and never scale: the result is the conv's sum regrouped (its error against an f64
conv is measured in docs/passes.md).

Legal on ungrouped channels-last 2-D f32/f64 convs with a 3x3 kernel, stride 1, no dilation,
non-negative pads and no wider accumulation type, whose precision is not HIGHEST (which asks
for the direct sum: `lower-quantized`'s exact f32 sums of integers ask it). Profitable (the cost model) with a constant
kernel (an imported network's; `any_kernel` takes the others too) and at least `min_features`
input and output features each, where the GEMMs' saving outweighs the transforms' traffic
(docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from convc.builders import constant_array, leading, pad_along, reshape, slice_along, tap_range, transpose
from convc.conv_facts import WIDE_FLOATS, ConvFacts
from convc.conv_lowering import LOWERING, ConvLowering
from convc.dtypes import numpy_dtype
from convc.ir import Op, Value
from convc.rewrite import Rewriter, pattern_pass

TILE, OUT = 4, 2  # a tile's input rows, and the output rows it makes (the kernel's 3 = TILE - OUT + 1)
INPUT_TRANSFORM = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])  # Bᵀ
KERNEL_TRANSFORM = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])  # G
OUTPUT_TRANSFORM = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])  # Aᵀ


def asks_highest(precision: object) -> bool:
    """Whether a conv's `precision` asks for HIGHEST on either operand: the direct sum, which
    Winograd's regrouping (its fractions and larger partial sums) is not; `lower-quantized`
    asks it of the f32 convs whose integer sums must be exact."""
    return precision == "HIGHEST" or (isinstance(precision, tuple) and "HIGHEST" in precision)


def signed_sum(rewriter: Rewriter, coefficients: Sequence[int], terms: Sequence[Value], suffix: str) -> Value:
    """Σ c·t over the terms whose coefficient c is ±1 (0 skips one), as adds and subtracts, the
    added terms first (a negate only where every term is subtracted)."""
    signed = sorted(((c, term) for c, term in zip(coefficients, terms, strict=True) if c != 0), key=lambda ct: -ct[0])
    first_sign, total = signed[0]
    if first_sign < 0:
        total = rewriter.create("negate", total, suffix=suffix)
    for c, term in signed[1:]:
        total = rewriter.create("add" if c > 0 else "subtract", total, term, suffix=suffix)
    return total


def transform_2d(rewriter: Rewriter, matrix: np.ndarray, tile: Sequence[Sequence[Value]], suffix: str) -> list[list[Value]]:
    """`matrix · tile · matrixᵀ` of a tile of values (rows of columns), each entry a value."""
    rows = [[signed_sum(rewriter, row, [tile[i][j] for i in range(len(tile))], f"{suffix}_rows") for j in range(len(tile[0]))]
            for row in matrix]
    return [[signed_sum(rewriter, col, rows[p], suffix) for col in matrix] for p in range(len(matrix))]


def transformed_kernel(rewriter: Rewriter, kernel: Value, facts: ConvFacts) -> Value:
    """G g Gᵀ for each input and output feature, as [16, C, K] (row-major over the 4x4 tile)."""
    spec = facts.dn.rhs_spec
    order = (spec[2], spec[3], spec[1], spec[0])  # [3, 3, C, K]
    both = np.einsum("pi,qj->pqij", KERNEL_TRANSFORM, KERNEL_TRANSFORM).reshape(TILE * TILE, 9)
    shape = (TILE * TILE, facts.in_features, facts.out_features)
    values = constant_array(kernel)
    if values is not None:  # exact in f64, rounded once
        hwio = np.transpose(values.astype(np.float64), order).reshape(9, -1)
        return rewriter.create("constant", suffix="winograd_kernel", value=(both @ hwio).reshape(shape).astype(values.dtype))
    dtype = numpy_dtype(kernel.type.dtype)
    hwio = reshape(rewriter, transpose(rewriter, kernel, order, "hwio"), (9, facts.in_features * facts.out_features), "taps")
    transform = rewriter.create("constant", suffix="kernel_transform", value=both.astype(dtype))
    product = rewriter.create("dot_general", transform, hwio, suffix="winograd_kernel", lhs_contracting_dimensions=(1,),
                              rhs_contracting_dimensions=(0,), precision="HIGHEST")
    return reshape(rewriter, product, shape, "winograd_kernel")


@dataclass(frozen=True)
class ConvWinograd(ConvLowering):
    name = "cpu-conv-winograd"
    requires = ("an ungrouped channels-last 2-D f32/f64 conv with a 3x3 kernel, stride 1, no dilation, "
                "non-negative pads, no wider accumulation type and no HIGHEST precision")
    min_features: int = 128  # the fewest input and output features each worth the transforms
    any_kernel: bool = False  # also convs whose kernel is not a constant (a training step's, a kernel given as input)

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return (facts.kernel_spatial == (3, 3) and facts.feature_groups == facts.batch_groups == 1
                and facts.strides == facts.lhs_dilation == facts.rhs_dilation == (1, 1)
                and all(lo >= 0 and hi >= 0 for lo, hi in facts.pads)
                and facts.lhs.dtype in WIDE_FLOATS and facts.accumulates_in_input_type()
                and facts.channels_last()
                and not asks_highest(facts.precision))

    def profitable(self, facts: ConvFacts) -> bool:
        return min(facts.in_features, facts.out_features) >= self.min_features

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        """The cost model also asks for a constant kernel (unless `any_kernel`): a training step
        whose kernels are arguments ran slower with the transform (docs/benchmarks.md)."""
        if self.any_kernel or LOWERING in op.attrs or constant_array(op.operands[1]) is not None:
            super().match_and_rewrite(op, rewriter)

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        lhs, rhs = op.operands
        batch, features = facts.lhs.shape[0], facts.in_features
        tiles = [-(-size // OUT) for size in facts.out_spatial]  # tile rows and columns, the last maybe partly outside
        pads = {dim: (lo, hi + OUT * count - size, 0) for dim, (lo, hi), count, size in zip((1, 2), facts.pads, tiles, facts.out_spatial)}
        padded = pad_along(rewriter, lhs, pads, "winograd_padded")
        tile = [[slice_along(rewriter, padded, {1: tap_range(i, 1, OUT, tiles[0]), 2: tap_range(j, 1, OUT, tiles[1])}, "tile")
                 for j in range(TILE)] for i in range(TILE)]
        positions = batch * tiles[0] * tiles[1]
        inputs = stacked_tiles(rewriter, transform_2d(rewriter, INPUT_TRANSFORM, tile, "winograd_input"), positions, features)
        products = rewriter.create(
            "dot_general", inputs, transformed_kernel(rewriter, rhs, facts), suffix="winograd_products",
            lhs_batching_dimensions=(0,), rhs_batching_dimensions=(0,), lhs_contracting_dimensions=(2,),
            rhs_contracting_dimensions=(1,), precision=facts.precision, preferred_element_type=facts.preferred_element_type)
        blocks = (batch, *tiles, facts.out_features)
        product_tile = [[reshape(rewriter, slice_along(rewriter, products, {0: (TILE * p + q, TILE * p + q + 1)}, "product"),
                                 blocks, "product") for q in range(TILE)] for p in range(TILE)]
        outputs = transform_2d(rewriter, OUTPUT_TRANSFORM, product_tile, "winograd_output")
        rewriter.replace_anchor(leading(rewriter, interleaved(rewriter, outputs, blocks), facts.out.shape, "winograd_rows"))


def stacked_tiles(rewriter: Rewriter, transformed: list[list[Value]], positions: int, features: int) -> Value:
    """The 4x4 transformed tiles (each [N, TH, TW, C]) as [16, positions, C], row-major: a
    concatenate of four concatenates of four, which XLA:CPU fuses with the transform into one
    loop (it does not fuse one of more than eight operands, and then writes sixteen buffers and
    copies them; docs/benchmarks.md)."""
    rows = [rewriter.create("concatenate", *(reshape(rewriter, v, (1, 1, positions, features), "winograd_input") for v in row),
                            suffix="winograd_input_row", dimension=1) for row in transformed]
    joined = rewriter.create("concatenate", *rows, suffix="winograd_inputs", dimension=0)
    return reshape(rewriter, joined, (TILE * TILE, positions, features), "winograd_inputs")


def interleaved(rewriter: Rewriter, outputs: list[list[Value]], blocks: tuple[int, ...]) -> Value:
    """The 2x2 output blocks (each [N, TH, TW, K], by row then column within the block) as
    one [N, 2·TH, 2·TW, K] map."""
    batch, rows, cols, features = blocks
    block_rows = []
    for row in outputs:
        columns = [reshape(rewriter, v, (batch, rows, 1, cols, 1, features), "block") for v in row]
        block_rows.append(rewriter.create("concatenate", *columns, suffix="block_row", dimension=4))
    joined = rewriter.create("concatenate", *block_rows, suffix="blocks", dimension=2)
    return reshape(rewriter, joined, (batch, OUT * rows, OUT * cols, features), "winograd_map")


CpuConvWinograd = pattern_pass(
    ConvWinograd, "3x3 stride-1 convs with enough features become Winograd F(2x2, 3x3): 16 batched GEMMs between adds")
