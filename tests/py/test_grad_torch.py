"""`convc.grad` against PyTorch autograd, for models written in PyTorch's conventions: a
grouped `conv{1,2,3}d` (NC.../OI..., symmetric pads, dilation, `groups`), a `relu`, then a
`conv_transpose{1,2,3}d` with `output_padding` (convc's `conv_backprop_input`, as
test_torch_semantics.py shows). The gradients of the input and of both weights must agree.

torch is an optional test dependency (`pip install torch==2.13.0`); without it these skip
(fail where CONVC_REQUIRE_ORACLES names torch, as in CI's oldest environment).
"""

from __future__ import annotations

from dataclasses import dataclass

import convc
import numpy as np
import pytest
from convc.runtime import compile_stablehlo
from optional_oracles import oracle

torch = oracle("torch")
F = torch.nn.functional


@dataclass(frozen=True)
class Block:
    """conv (weight w1: C_out, C_in / groups, *k) -> relu -> conv_transpose (weight w2:
    C_in, C_out / groups, *k), each with torch's stride, padding, dilation and groups."""

    input: tuple[int, ...]
    w1: tuple[int, ...]
    w2: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    output_padding: tuple[int, ...]

    def pads(self) -> list[tuple[int, int]]:
        return [(p, p) for p in self.padding]


BLOCKS = {
    "1d_depthwise": Block((2, 4, 9), (8, 1, 3), (8, 1, 3), (2,), (1,), (1,), groups=4, output_padding=(1,)),
    "2d_resnext": Block((2, 8, 7, 6), (8, 2, 3, 3), (8, 2, 3, 3), (2, 1), (1, 1), (1, 2), groups=4, output_padding=(1, 0)),
    "3d_grouped": Block((1, 4, 5, 4, 3), (4, 2, 2, 3, 2), (4, 1, 2, 3, 2), (2, 1, 1), (0, 1, 1), (1, 1, 1), groups=2,
                        output_padding=(1, 0, 0)),
}


def convc_step(block: Block) -> convc.Graph:
    b = convc.Builder("torch_block")
    x, w1, w2 = b.input("x", block.input), b.input("w1", block.w1), b.input("w2", block.w2)
    hidden = b.relu(b.conv(x, w1, block.stride, block.pads(), rhs_dilation=block.dilation, feature_group_count=block.groups))
    b.output(b.conv_backprop_input(hidden, w2, block.stride, block.pads(), rhs_dilation=block.dilation,
                                   feature_group_count=block.groups, output_padding=block.output_padding, name="y"))
    return convc.grad(b.build(), ["x", "w1", "w2"])


def torch_step(block: Block, arrays: list[np.ndarray], cotangent: np.ndarray) -> list[np.ndarray]:
    n = len(block.stride)
    conv = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    transpose = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
    x, w1, w2 = (torch.from_numpy(a).requires_grad_(True) for a in arrays)
    hidden = F.relu(conv(x, w1, stride=block.stride, padding=block.padding, dilation=block.dilation, groups=block.groups))
    y = transpose(hidden, w2, stride=block.stride, padding=block.padding, output_padding=block.output_padding,
                  groups=block.groups, dilation=block.dilation)
    grads = torch.autograd.grad(y, [x, w1, w2], grad_outputs=torch.from_numpy(cotangent))
    return [y.detach().numpy(), *(g.numpy() for g in grads)]


@pytest.mark.parametrize("target", ["generic", "cpu"])
@pytest.mark.parametrize("name", BLOCKS)
def test_grad_matches_torch_autograd(name: str, target: str) -> None:
    block = BLOCKS[name]
    step = convc_step(block)
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in (block.input, block.w1, block.w2)]
    cotangent = rng.standard_normal(step.inputs[3].type.shape).astype(np.float32)
    got = compile_stablehlo(convc.compile_graph(step, target=target), "cpu")(*arrays, cotangent)
    want = torch_step(block, arrays, cotangent)
    for name_, g, w in zip(("y", "x.grad", "w1.grad", "w2.grad"), got, want, strict=True):
        assert g.shape == w.shape, name_
        np.testing.assert_allclose(g, w, rtol=0, atol=5e-5 * (1 + float(np.max(np.abs(w)))), err_msg=name_)
