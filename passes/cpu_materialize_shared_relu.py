"""cpu-materialize-shared-relu: a float `relu` read by more than one op becomes
`maximum(x, clamp(x, 0, 0))`, the same values, which XLA:CPU computes once.

XLA's instruction fusion copies an "effectively unary" producer (one full-size operand, the
rest broadcasts: `maximum(x, broadcast(0))`, which is how a relu reaches it) into every
fusion that reads it, even where another reader (a conv, a dot) makes it materialize the
value anyway. The copy then brings its own producers along: in a residual network each
block's `relu(add(conv, previous block's output))` is recomputed inside the next block's
add from every earlier block's conv outputs of its stage, so the k-th add of a stage reads
k + 1 arrays instead of two (six blocks deep in ResNet-50's third stage), and the strided
slice of a downsampling block does the same. jaxlib 0.10.2 drops an `optimization_barrier`
before fusing, so a barrier cannot stop it there.

`maximum(x, clamp(x, 0, 0))` has two full-size operands, and XLA does not copy such a
producer into its fusible readers when a reader cannot fuse it: the value is computed once
and read back. It is the relu, element for element: `clamp(x, 0, 0)` is 0 for every x but
NaN (it propagates NaN, as `maximum` does), so the result is `maximum(x, 0)` for every x,
±0 and ±inf included. Figures in docs/benchmarks.md.
"""

from __future__ import annotations

from convc.dtypes import is_float
from convc.ir import Graph, Op
from convc.rewrite import RewritePattern, Rewriter, pattern_pass


def read_by_several(op: Op, graph: Graph) -> bool:
    """Whether `op`'s result has more than one reader: the ops that read it, and the graph's
    return when it is an output (which materializes it too)."""
    returned = any(output is op.result for output in graph.outputs)
    return len({id(user) for user in op.result.users}) + returned > 1


class MaterializeSharedRelu(RewritePattern):
    kind = "relu"
    name = "cpu-materialize-shared-relu"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        x = op.operands[0]
        if not is_float(x.type.dtype) or not read_by_several(op, rewriter.graph):
            return
        zeros = rewriter.create("clamp", x, suffix="zeros", min=0.0, max=0.0)
        rewriter.replace_anchor(rewriter.create("maximum", x, zeros, suffix="once"))


CpuMaterializeSharedRelu = pattern_pass(
    MaterializeSharedRelu, "a float relu read by several ops becomes maximum(x, clamp(x, 0, 0)), the same values, which XLA:CPU "
    "computes once instead of copying it (and its producers) into each reader's fusion")
