"""Training-step cases of the conv suite (`python -m convc.tools.bench --suite train`):
forward plus backward of five small networks, each written once against a tiny layer
interface and built three ways:

* convc: the forward model with the Builder, `convc.grad(model, wrt=["x", weights...])`,
  compiled for the target and run through PJRT with the output cotangent as an input;
* JAX: `jax.jit` of `jax.vjp` of the same `jax.lax` program (forward + pullback);
* PyTorch (when installed): the same layers in `torch.nn.functional` on channels-last
  tensors, forward then `torch.autograd.grad`.

Each step returns the block's output, then the gradients of its input and of every weight
and bias, in that order; convc's are checked against JAX's before anything is timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from . import bench

# --- the layer interface, three ways -------------------------------------------------------


class Layers(Protocol):
    """What a block is written against: convc (building a model), JAX and PyTorch (computing)."""

    def conv(self, x: Any, w: Any, bias: Any = None, stride: int = 1, groups: int = 1) -> Any: ...
    def depthwise(self, x: Any, w: Any, bias: Any = None) -> Any: ...
    def conv_transpose(self, x: Any, w: Any, bias: Any = None, stride: int = 2, pad: int = 1) -> Any: ...
    def relu(self, x: Any) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...


def symmetric_pads(kernel: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """PyTorch's `padding=(k - 1) // 2` for odd kernels: the output keeps the input's size."""
    return tuple(((k - 1) // 2, (k - 1) // 2) for k in kernel)


def transposed_pads(kernel: Sequence[int], pads: Sequence[tuple[int, int]], output_padding: int) -> list[tuple[int, int]]:
    """PyTorch's ConvTranspose padding `p` as lax.conv_transpose's explicit pads."""
    return [(k - 1 - lo, k - 1 - hi + output_padding) for k, (lo, hi) in zip(kernel, pads)]


class ConvcLayers:
    """Builds the block as a convc model; records the forward convs' multiply-adds."""

    def __init__(self, builder: Any) -> None:
        self.b = builder
        self.macs = 0

    def conv(self, x: Any, w: Any, bias: Any = None, stride: int = 1, groups: int = 1) -> Any:
        kernel = w.type.shape[:-2]
        rank = len(kernel)
        letters = bench.SPATIAL_LETTERS[rank]
        y = self.b.conv(x, w, window_strides=(stride,) * rank, padding=symmetric_pads(kernel),
                        dimension_numbers=(f"N{letters}C", f"{letters}IO", f"N{letters}C"), feature_group_count=groups)
        self.macs += math.prod(y.type.shape) * math.prod(w.type.shape) // w.type.shape[-1]
        return y if bias is None else self.b.bias_add(y, bias)

    def depthwise(self, x: Any, w: Any, bias: Any = None) -> Any:
        return self.conv(x, w, bias, groups=w.type.shape[-1])

    def conv_transpose(self, x: Any, w: Any, bias: Any = None, stride: int = 2, pad: int = 1) -> Any:
        """PyTorch's ConvTranspose (kernel: the forward conv's HWIO, O = x's features)."""
        kernel = w.type.shape[:-2]
        rank = len(kernel)
        letters = bench.SPATIAL_LETTERS[rank]
        y = self.b.conv_backprop_input(x, w, window_strides=(stride,) * rank, padding=((pad, pad),) * rank,
                                       dimension_numbers=(f"N{letters}C", f"{letters}IO", f"N{letters}C"),
                                       output_padding=(0,) * rank)
        self.macs += math.prod(x.type.shape) * math.prod(w.type.shape) // w.type.shape[-1]
        return y if bias is None else self.b.bias_add(y, bias)

    def relu(self, x: Any) -> Any:
        return self.b.relu(x)

    def add(self, a: Any, b: Any) -> Any:
        return self.b.add(a, b)


class JaxLayers:
    """The block in jax.lax, channels-last, as a JAX user writes it."""

    def conv(self, x: Any, w: Any, bias: Any = None, stride: int = 1, groups: int = 1) -> Any:
        from jax import lax

        kernel = w.shape[:-2]
        rank = len(kernel)
        letters = bench.SPATIAL_LETTERS[rank]
        y = lax.conv_general_dilated(x, w, (stride,) * rank, symmetric_pads(kernel),
                                     dimension_numbers=(f"N{letters}C", f"{letters}IO", f"N{letters}C"),
                                     feature_group_count=groups)
        return y if bias is None else y + bias

    def depthwise(self, x: Any, w: Any, bias: Any = None) -> Any:
        return self.conv(x, w, bias, groups=w.shape[-1])

    def conv_transpose(self, x: Any, w: Any, bias: Any = None, stride: int = 2, pad: int = 1) -> Any:
        from jax import lax

        kernel = w.shape[:-2]
        rank = len(kernel)
        letters = bench.SPATIAL_LETTERS[rank]
        y = lax.conv_transpose(x, w, (stride,) * rank, transposed_pads(kernel, ((pad, pad),) * rank, 0),
                               dimension_numbers=(f"N{letters}C", f"{letters}IO", f"N{letters}C"), transpose_kernel=True)
        return y if bias is None else y + bias

    def relu(self, x: Any) -> Any:
        import jax

        return jax.nn.relu(x)  # derivative 0 at 0, as convc's relu_grad and PyTorch's

    def add(self, a: Any, b: Any) -> Any:
        return a + b


class TorchLayers:
    """The block in torch.nn.functional on channels-first tensors in channels-last memory,
    kernels in PyTorch's OI(D)HW, biases passed to the conv (as torch.nn.Conv does)."""

    def conv(self, x: Any, w: Any, bias: Any = None, stride: int = 1, groups: int = 1) -> Any:
        import torch

        kernel = tuple(w.shape[2:])
        conv = {2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[len(kernel)]
        return conv(x, w, bias, stride, tuple(lo for lo, _ in symmetric_pads(kernel)), 1, groups)

    def depthwise(self, x: Any, w: Any, bias: Any = None) -> Any:
        return self.conv(x, w, bias, groups=w.shape[0])

    def conv_transpose(self, x: Any, w: Any, bias: Any = None, stride: int = 2, pad: int = 1) -> Any:
        import torch

        rank = w.dim() - 2
        transposed = {2: torch.nn.functional.conv_transpose2d, 3: torch.nn.functional.conv_transpose3d}[rank]
        return transposed(x, w, bias, stride, pad)

    def relu(self, x: Any) -> Any:
        import torch

        return torch.relu(x)

    def add(self, a: Any, b: Any) -> Any:
        return a + b


# --- the five blocks ---------------------------------------------------------------------


Block = Callable[[Layers, Any, dict[str, Any]], Any]


def resnet_basic(layers: Layers, x: Any, p: dict[str, Any]) -> Any:
    """conv3x3 + bias, relu, conv3x3 + bias, + x, relu."""
    y = layers.relu(layers.conv(x, p["w1"], p["b1"]))
    return layers.relu(layers.add(layers.conv(y, p["w2"], p["b2"]), x))


def resnext(layers: Layers, x: Any, p: dict[str, Any]) -> Any:
    """1x1 reduce, grouped 3x3 (G = 32), 1x1 expand, each + bias; relus; + x, relu."""
    y = layers.relu(layers.conv(x, p["w1"], p["b1"]))
    y = layers.relu(layers.conv(y, p["w2"], p["b2"], groups=32))
    return layers.relu(layers.add(layers.conv(y, p["w3"], p["b3"]), x))


def mobilenet(layers: Layers, x: Any, p: dict[str, Any]) -> Any:
    """Depthwise 3x3 + bias, relu, pointwise 1x1 + bias, relu."""
    y = layers.relu(layers.depthwise(x, p["dw"], p["b1"]))
    return layers.relu(layers.conv(y, p["pw"], p["b2"]))


def conv3d(layers: Layers, x: Any, p: dict[str, Any]) -> Any:
    """Two 3x3x3 convs, each + bias and relu."""
    y = layers.relu(layers.conv(x, p["w1"], p["b1"]))
    return layers.relu(layers.conv(y, p["w2"], p["b2"]))


def dcgan_generator(layers: Layers, x: Any, p: dict[str, Any]) -> Any:
    """Two ConvTranspose 4x4 stride 2 padding 1 (each doubles H and W), each + bias, relu."""
    y = layers.relu(layers.conv_transpose(x, p["t1"], p["b1"]))
    return layers.relu(layers.conv_transpose(y, p["t2"], p["b2"]))


@dataclass(frozen=True)
class TrainSpec:
    """One training-step case: a block, its input's shape and its parameters' shapes
    (kernels in the forward conv's channels-last layout, (D)HWIO; biases 1-D)."""

    name: str
    what: str
    block: Block
    input_shape: tuple[int, ...]
    params: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def batch(self) -> int:
        return self.input_shape[0]

    def with_batch(self, batch: int) -> TrainSpec:
        return replace(self, input_shape=(batch, *self.input_shape[1:]))

    def describe(self) -> str:
        return f"{self.what} {'x'.join(str(d) for d in self.input_shape)}"

    def wrt(self) -> list[str]:
        return ["x", *(name for name, _ in self.params)]

    def flops(self) -> float:
        """2 x the forward convs' multiply-adds x 3 (forward, input and kernel gradients)."""
        return 2.0 * 3 * forward_model(self)[1]


def _conv_params(*layers: tuple[str, tuple[int, ...]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each kernel followed by its bias `b<i>` (sized by the kernel's output features)."""
    params: list[tuple[str, tuple[int, ...]]] = []
    for i, (name, kernel) in enumerate(layers, start=1):
        params += [(name, kernel), (f"b{i}", (kernel[-1],))]
    return tuple(params)


def train_cases(quick: bool = False) -> list[TrainSpec]:
    """The five blocks: modest shapes (the whole suite in a few minutes on 2 cores), or tiny ones (--quick)."""
    n = 1 if quick else 4  # batch
    hw = 8 if quick else 28  # ResNet / ResNeXt spatial size (MobileNet: twice that)
    wide, mid = (64, 64) if quick else (256, 128)  # ResNeXt's outer and inner channels (G = 32)
    narrow = wide // 4  # ResNet's channels
    dw, pw = (16, 32) if quick else (64, 128)  # MobileNet's depthwise and pointwise channels
    depth, c3 = ((4, 8, 8), 8) if quick else ((8, 16, 16), 32)  # the 3-D block's D, H, W and channels
    gan = 32 if quick else 128  # DCGAN's input channels (halved by each ConvTranspose)
    side = hw // 4 + 1  # DCGAN's input H = W (doubled twice)
    return [
        TrainSpec("train_resnet_basic", "ResNet basic 3x3", resnet_basic, (n, hw, hw, narrow),
                  _conv_params(("w1", (3, 3, narrow, narrow)), ("w2", (3, 3, narrow, narrow)))),
        TrainSpec("train_resnext_g32", f"ResNeXt 1x1,3x3 G32,1x1 {mid}", resnext, (n, hw, hw, wide),
                  _conv_params(("w1", (1, 1, wide, mid)), ("w2", (3, 3, mid // 32, mid)), ("w3", (1, 1, mid, wide)))),
        TrainSpec("train_mobilenet_dws", f"MobileNet dw3x3,pw1x1 ->{pw}", mobilenet, (n, 2 * hw, 2 * hw, dw),
                  _conv_params(("dw", (3, 3, 1, dw)), ("pw", (1, 1, dw, pw)))),
        TrainSpec("train_conv3d", "3-D 3x3x3 x2", conv3d, (max(1, n // 2), *depth, c3),
                  _conv_params(("w1", (3, 3, 3, c3, c3)), ("w2", (3, 3, 3, c3, c3)))),
        # a ConvTranspose kernel is its forward conv's (H, W, I, O): O = its input's channels
        TrainSpec("train_dcgan_gen", f"DCGAN ConvT4x4s2 x2 ->{gan // 4}", dcgan_generator, (n, side, side, gan),
                  (("t1", (4, 4, gan // 2, gan)), ("b1", (gan // 2,)), ("t2", (4, 4, gan // 4, gan // 2)), ("b2", (gan // 4,)))),
    ]


# --- building and running a case ----------------------------------------------------------


def forward_model(spec: TrainSpec) -> tuple[Any, int]:
    """The block as a convc model (inputs: x, then the parameters) and its convs' multiply-adds."""
    import convc

    b = convc.Builder(spec.name)
    x = b.input("x", spec.input_shape)
    params = {name: b.input(name, shape) for name, shape in spec.params}
    layers = ConvcLayers(b)
    b.output(spec.block(layers, x, params))
    return b.build(), layers.macs


def convc_step(spec: TrainSpec) -> Any:
    """The training step as convc builds it: `convc.grad` of the forward model."""
    import convc

    return convc.grad(forward_model(spec)[0], wrt=spec.wrt())


def jax_step(spec: TrainSpec) -> Callable[..., Any]:
    """(x, *params, cotangent) -> (output, dx, *dparams): jax.vjp of the block in jax.lax."""
    import jax

    names = [name for name, _ in spec.params]

    def forward(x: Any, *params: Any) -> Any:
        return spec.block(JaxLayers(), x, dict(zip(names, params)))

    def step(x: Any, *rest: Any) -> Any:
        *params, cotangent = rest
        out, pullback = jax.vjp(forward, x, *params)
        return (out, *pullback(cotangent))

    return step


def step_arrays(spec: TrainSpec, seed: int = 0) -> list[np.ndarray]:
    """x ~ N(0, 1), kernels ~ N(0, 2 / fan-in) (He), biases ~ N(0, 0.1^2), then the cotangent."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(spec.input_shape).astype(np.float32)]
    for _, shape in spec.params:
        scale = 0.1 if len(shape) == 1 else math.sqrt(2.0 / math.prod(shape[:-1]))
        arrays.append((scale * rng.standard_normal(shape)).astype(np.float32))
    out_shape = forward_model(spec)[0].outputs[0].type.shape
    arrays.append(rng.standard_normal(out_shape).astype(np.float32))
    return arrays


def _to_torch_layout(array: np.ndarray, device: str) -> Any:
    """A channels-last activation or (D)HWIO kernel as PyTorch's N C (D)HW / O I (D)HW,
    channels-last in memory; a bias as is."""
    import torch

    tensor = torch.from_numpy(array).to(device)
    rank = array.ndim - 2
    if rank < 1:
        return tensor.contiguous()
    memory_format = {2: torch.channels_last, 3: torch.channels_last_3d}[rank]
    return tensor.permute(*_torch_permutation(array.ndim, is_kernel=False)).contiguous(memory_format=memory_format)


def _torch_permutation(ndim: int, is_kernel: bool) -> tuple[int, ...]:
    rank = ndim - 2
    return (rank + 1, rank, *range(rank)) if is_kernel else (0, rank + 1, *range(1, rank + 1))


def torch_step(spec: TrainSpec, arrays: Sequence[np.ndarray], device: str = "cpu") -> Callable[[], Any] | None:
    """A thunk running the step in PyTorch (None without torch): the forward, then
    torch.autograd.grad of the output with the cotangent, for x and every parameter."""
    try:
        import torch
    except ImportError:
        return None
    x_array, *param_arrays, ct_array = arrays
    x = _to_torch_layout(x_array, device).requires_grad_()
    params = {}
    for (name, shape), array in zip(spec.params, param_arrays):
        tensor = torch.from_numpy(array).to(device)
        if len(shape) > 1:
            memory_format = {4: torch.channels_last, 5: torch.channels_last_3d}[len(shape)]
            tensor = tensor.permute(*_torch_permutation(len(shape), is_kernel=True)).contiguous(memory_format=memory_format)
        params[name] = tensor.requires_grad_()
    cotangent = _to_torch_layout(ct_array, device)
    leaves = [x, *params.values()]

    def run() -> Any:
        out = spec.block(TorchLayers(), x, params)
        grads = torch.autograd.grad(out, leaves, cotangent)
        if device != "cpu":
            torch.cuda.synchronize()
        return (out, *grads)

    return run


def torch_results_channels_last(spec: TrainSpec, results: Sequence[Any]) -> list[np.ndarray]:
    """PyTorch's (out, dx, *dparams) in convc's layouts (channels-last, (D)HWIO)."""
    shapes = [None, None, *(shape for _, shape in spec.params)]
    converted = []
    for result, shape in zip(results, shapes):
        array = result.detach().cpu().numpy()
        if shape is not None and len(shape) == 1:
            converted.append(array)
            continue
        is_kernel = shape is not None
        inverse = np.argsort(_torch_permutation(array.ndim, is_kernel))
        converted.append(np.ascontiguousarray(array.transpose(*inverse)))
    return converted


def max_relative_error(ours: Sequence[np.ndarray], reference: Sequence[np.ndarray]) -> float:
    """Max over the results of max |ours - ref| / (1 + max |ref|) (inf on a shape mismatch)."""
    worst = 0.0
    for a, r in zip(ours, reference, strict=True):
        if a.shape != r.shape:
            return math.inf
        worst = max(worst, float(np.abs(a - r).max(initial=0.0)) / (1.0 + float(np.abs(r).max(initial=0.0))))
    return worst


def compile_step(spec: TrainSpec, target: str, pjrt_platform: str, autotune: bool) -> Any:
    from convc.compile import Compiler

    compiler = Compiler(target=target, autotune=autotune, autotune_platform=pjrt_platform)
    return compiler.executable(compiler.run_passes(convc_step(spec)), pjrt_platform)


def run_train_case(spec: TrainSpec, target: str, budget_s: float, use_torch: bool, seed: int = 0, autotune: bool = False,
                   pjrt_platform: str = "cpu") -> bench.CaseResult:
    """Compile, check against JAX (and PyTorch), then time the three steps interleaved."""
    import jax

    arrays = step_arrays(spec, seed)
    executable = compile_step(spec, target, pjrt_platform, autotune)
    buffers = [jax.device_put(a, executable.device) for a in arrays]
    jax_fn = jax.jit(jax_step(spec))

    def convc_run() -> Any:
        return executable.run_on_device(buffers)

    def jax_run() -> Any:
        return jax_fn(*buffers)

    jax_out = [np.asarray(r) for r in jax_run()]
    error = max_relative_error([np.asarray(r) for r in convc_run()], jax_out)
    thunks: dict[str, Callable[[], None]] = {"convc": lambda: bench.block_until_ready(convc_run()),
                                                "jax": lambda: bench.block_until_ready(jax_run())}
    torch_error = None
    torch_run = torch_step(spec, arrays, "cuda" if pjrt_platform == "gpu" else "cpu") if use_torch else None
    if torch_run is not None:
        torch_error = max_relative_error(torch_results_channels_last(spec, torch_run()), jax_out)
        thunks["torch"] = torch_run
    samples = bench.Timer(budget_s).run(thunks)
    medians, best, iqr = bench.summarize(samples)
    gflop = spec.flops() / 1e9
    return bench.CaseResult(
        spec.name, spec.describe(), gflop, medians, best, iqr, len(samples["convc"]), {name: gflop / (ms / 1e3) for name, ms in medians.items()},
        medians["convc"] / medians["jax"], medians["convc"] / medians["torch"] if "torch" in medians else None,
        error, torch_error,
        custom_calls={"convc": bench.custom_call_targets(executable.hlo_text()),
                      "jax": bench.custom_call_targets(jax_fn.lower(*buffers).compile().as_text() or "")})
