"""cpu-materialize-shared-relu: a float `relu` read by more than one op, one of them not a conv
or a dot, becomes `maximum(x, clamp(x, 0, 0))`, the same values, which XLA:CPU computes once.

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
from convc.rewrite import UNFUSED_READERS, RewritePattern, Rewriter, pattern_pass


def copied_into_readers(op: Op, graph: Graph) -> bool:
    """Whether XLA would copy `op`'s result into a reader: it has more than one reader (the
    graph's return, which materializes it, counts as one) and one of them is an op XLA fuses
    producers into."""
    returned = any(output is op.result for output in graph.outputs)
    readers = {id(user): user.kind for user in op.result.users}
    return len(readers) + returned > 1 and any(kind not in UNFUSED_READERS for kind in readers.values())


class MaterializeSharedRelu(RewritePattern):
    kind = "relu"
    name = "cpu-materialize-shared-relu"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        x = op.operands[0]
        if not is_float(x.type.dtype) or not copied_into_readers(op, rewriter.graph):
            return
        zeros = rewriter.create("clamp", x, suffix="zeros", min=0.0, max=0.0)
        rewriter.replace_anchor(rewriter.create("maximum", x, zeros, suffix="once"))


CpuMaterializeSharedRelu = pattern_pass(
    MaterializeSharedRelu, "a float relu read by several ops, not all convs or dots, becomes maximum(x, clamp(x, 0, 0)), the same values, which XLA:CPU "
    "computes once instead of copying it (and its producers) into each reader's fusion")
