"""cpu-max-pool-tap-max: a float max pool becomes the maximum of its window's taps: the input
padded with -inf (the pool's own padding), one strided slice per tap, folded by `maximum`.

XLA:CPU runs a `reduce_window` as a loop over the output elements, each walking its window;
the taps' slices and maxima are one elementwise loop instead, which also takes in the ops that
make the pool's input (a stem conv's bias and ReLU). The same values: max is exact in any order
and propagates NaN as the pool's body does; only a zero's sign can differ where -0 and +0 meet
in one window. Taken without base dilation or negative padding (a crop), up to `max_taps`
window positions (a 3x3 pool's 9; a global pool's many taps are left) over at most
`max_elements` input elements: the cost model, as a batch-1 stem's pool gained and a batch-8
one did not (an int8 network's lost). Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from convc.builders import DimRange, combine_values, pad, slice_along, tap_range
from convc.dtypes import is_float
from convc.ir import Op, Value
from convc.ops import view
from convc.ops.pool import pool_padding
from convc.rewrite import RewritePattern, Rewriter, pattern_pass


@dataclass
class MaxPoolTapMax(RewritePattern):
    kind = "max_pool"
    name = "cpu-max-pool-tap-max"
    max_taps: int = 9  # window positions a pool may have
    max_elements: int = 1 << 21  # input elements a pool may have (a 1x112x112x64 stem's is 802,816)

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        v = view(op)
        x = op.operands[0]
        pads = pool_padding(v)
        if (not is_float(x.type.dtype) or any(d != 1 for d in v.base_dilation) or any(lo < 0 or hi < 0 for lo, hi in pads)
                or math.prod(v.window_dimensions) > self.max_taps or x.type.num_elements() > self.max_elements
                or op.result.type.num_elements() == 0):
            return
        padded = pad(rewriter, x, [(lo, hi, 0) for lo, hi in pads], "padded", padding_value=float("-inf"))
        taps = [_tap(rewriter, padded, tap, v.window_dilation, v.window_strides, op.result.type.shape)
                for tap in itertools.product(*(range(w) for w in v.window_dimensions))]
        rewriter.replace_anchor(combine_values(rewriter, taps, "maximum", "max"))


def _tap(rewriter: Rewriter, padded: Value, tap: tuple[int, ...], dilation: tuple[int, ...], strides: tuple[int, ...],
         out: tuple[int, ...]) -> Value:
    """The padded input's elements at window position `tap` of every output element: a strided slice."""
    ranges: dict[int, DimRange] = {dim: tap_range(*at) for dim, at in enumerate(zip(tap, dilation, strides, out))}
    return slice_along(rewriter, padded, ranges, "tap")


CpuMaxPoolTapMax = pattern_pass(MaxPoolTapMax, "float max pools become the maximum of strided slices of the -inf-padded input, "
                                "one per window position (one elementwise loop on XLA CPU)")
