"""PyTorch semantics: `conv_transpose{1,2,3}d` is `conv_backprop_input` with NC.../OI.../NC...
dimension numbers, symmetric pads, `output_padding`, `groups` and `dilation`; and the weight
gradient of a grouped `conv{1,2}d` (torch autograd) is `conv_backprop_filter`.

torch is an optional test dependency (`pip install torch==2.13.0`); without it these skip
(fail where CONVC_REQUIRE_ORACLES names torch, as in CI's oldest environment).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import convc
import numpy as np
import pytest
from convc.runtime import Executable, compile_stablehlo
from optional_oracles import oracle

torch = oracle("torch")


@functools.lru_cache(maxsize=32)
def _executable(text: str) -> Executable:
    return compile_stablehlo(text)


@dataclass(frozen=True)
class TorchConv:
    """torch's arguments: input (N, C, *S); weight (C_in, C_out / groups, *k) for the transposed
    conv, (C_out, C_in / groups, *k) for the forward one."""

    input: tuple[int, ...]
    weight: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    output_padding: tuple[int, ...] = ()

    def pads(self) -> list[tuple[int, int]]:
        return [(p, p) for p in self.padding]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(sum(self.input) * 7 + sum(self.weight))
        return rng.standard_normal(self.input).astype(np.float32), rng.standard_normal(self.weight).astype(np.float32)


TRANSPOSED = {
    "1d_groups_output_padding": TorchConv((2, 4, 5), (4, 3, 3), (2,), (1,), (1,), groups=2, output_padding=(1,)),
    "1d_stride1_dilation2_output_padding": TorchConv((1, 2, 6), (2, 3, 3), (1,), (0,), (2,), output_padding=(1,)),
    "2d_asymmetric_output_padding": TorchConv((1, 3, 4, 5), (3, 2, 3, 3), (2, 3), (1, 0), (1, 1), output_padding=(0, 2)),
    "2d_groups_dilation": TorchConv((2, 6, 3, 4), (6, 2, 3, 2), (2, 3), (1, 0), (1, 2), groups=3, output_padding=(1, 2)),
    "2d_depthwise": TorchConv((1, 4, 4, 4), (4, 2, 3, 3), (2, 2), (1, 1), (1, 1), groups=4, output_padding=(1, 0)),
    "3d_groups": TorchConv((1, 4, 3, 2, 3), (4, 1, 2, 2, 3), (2, 1, 2), (0, 1, 1), (1, 1, 1), groups=2, output_padding=(1, 0, 1)),
    "3d_dilation": TorchConv((1, 2, 2, 3, 2), (2, 3, 2, 2, 2), (1, 2, 2), (1, 0, 1), (2, 1, 2), output_padding=(1, 1, 0)),
}

FORWARD = {
    "1d_depthwise_multiplier": TorchConv((2, 3, 9), (6, 1, 3), (2,), (1,), (2,), groups=3),
    "2d_resnext_grouped": TorchConv((2, 8, 7, 6), (8, 2, 3, 3), (2, 1), (1, 1), (1, 2), groups=4),
}


def torch_conv_transpose(case: TorchConv, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    fn = (torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d, torch.nn.functional.conv_transpose3d)
    out = fn[len(case.stride) - 1](torch.from_numpy(x), torch.from_numpy(w), stride=case.stride, padding=case.padding,
                                   output_padding=case.output_padding, groups=case.groups, dilation=case.dilation)
    return out.numpy()


def torch_weight_grad(case: TorchConv, x: np.ndarray, w: np.ndarray, g: np.ndarray) -> np.ndarray:
    weight = torch.from_numpy(w).requires_grad_(True)
    fn = (torch.nn.functional.conv1d, torch.nn.functional.conv2d)[len(case.stride) - 1]
    out = fn(torch.from_numpy(x), weight, stride=case.stride, padding=case.padding, dilation=case.dilation, groups=case.groups)
    out.backward(torch.from_numpy(g))
    return weight.grad.numpy()


def run(graph: convc.Graph, arrays: list[np.ndarray]) -> np.ndarray:
    return _executable(convc.compile_graph(graph))(*arrays)[0]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * (1 + float(np.max(np.abs(want)))))


@pytest.mark.parametrize("name", TRANSPOSED)
def test_conv_transpose_nd_is_backprop_input(name: str) -> None:
    case = TRANSPOSED[name]
    x, w = case.arrays()
    b = convc.Builder(name)
    out_grad, rhs = b.input("x", x.shape), b.input("w", w.shape)
    b.output(b.conv_backprop_input(out_grad, rhs, case.stride, case.pads(), rhs_dilation=case.dilation,
                                   feature_group_count=case.groups, output_padding=case.output_padding))
    assert_close(run(b.build(), [x, w]), torch_conv_transpose(case, x, w))


@pytest.mark.parametrize("name", FORWARD)
def test_grouped_weight_gradient_is_backprop_filter(name: str) -> None:
    case = FORWARD[name]
    x, w = case.arrays()
    b = convc.Builder(name)
    lhs = b.input("x", x.shape)
    forward_out = b.conv(lhs, b.input("w", w.shape), case.stride, case.pads(), rhs_dilation=case.dilation,
                         feature_group_count=case.groups)
    g = np.random.default_rng(3).standard_normal(forward_out.type.shape).astype(np.float32)
    out_grad = b.input("g", g.shape)
    b.output(b.conv_backprop_filter(lhs, out_grad, w.shape, case.stride, case.pads(), rhs_dilation=case.dilation,
                                    feature_group_count=case.groups))
    assert_close(run(b.build(), [x, w, g]), torch_weight_grad(case, x, w, g))


def test_output_padding_must_be_below_stride_or_dilation() -> None:
    """PyTorch's rule; torch itself rejects the same value."""
    case = TorchConv((1, 2, 5), (2, 3, 3), (2,), (0,), (1,), output_padding=(2,))
    x, w = case.arrays()
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        torch_conv_transpose(case, x, w)
    b = convc.Builder()
    out_grad, rhs = b.input("x", x.shape), b.input("w", w.shape)
    with pytest.raises(convc.ConvcError, match=r"output_padding 2 .* max\(stride 2, dilation 1\) = 2\) \[B6\]"):
        b.conv_backprop_input(out_grad, rhs, case.stride, case.pads(), output_padding=case.output_padding)
