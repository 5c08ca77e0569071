"""Run a sharded module on N PJRT devices: XLA's SPMD partitioner (Shardy) splits the
global-shaped program; inputs go in as per-device shards, outputs come back assembled.

Each argument's and result's layout is read from the compiled executable (its parameter
and output shardings), so arguments left unpinned get whatever the partitioner chose.
Devices are the platform's first N in PJRT's order, which is the mesh's row-major order
(as `jax.make_mesh` lays out host devices).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .diagnostics import UNKNOWN, ConvcError, Location
from .runtime import _client

HOST_DEVICE_FLAG = "--xla_force_host_platform_device_count"


class TooFewDevicesError(ConvcError):
    """The platform has fewer devices than the mesh needs (S9): what this machine lacks, as
    `--platform gpu` without a GPU, so a user error, not convc's."""

    def __init__(self, platform: str, needed: int, found: int, hint: str = ""):
        super().__init__(f"the mesh needs {needed} devices; {platform} has {found} here{hint}", UNKNOWN, "S9")
        self.platform, self.needed, self.found = platform, needed, found


def _flag_count() -> int:
    match = re.search(rf"{HOST_DEVICE_FLAG}=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(match.group(1)) if match else 1


def request_host_devices(count: int) -> bool:
    """Ask XLA:CPU for at least `count` host devices; possible only before JAX's backends
    start (afterwards the count is fixed). Returns whether the request could be made."""
    import jax
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        return False
    current = max(_flag_count(), int(xla_bridge.num_cpu_devices.value))
    if current < count:
        jax.config.update("jax_num_cpu_devices", count)
    return True


def devices_for(count: int, platform: str | None = None) -> list[Any]:
    """The first `count` devices of the platform, or TooFewDevicesError."""
    client = _client(platform)
    devices = list(client.local_devices())
    if len(devices) < count:
        hint = _host_device_hint(count) if client.platform == "cpu" else ""
        raise TooFewDevicesError(str(client.platform), count, len(devices), hint)
    return devices[:count]


def _host_device_hint(count: int) -> str:
    """What to do when XLA:CPU started with too few host devices: its count is fixed once
    JAX's backend is up (any JAX computation, `jax.devices()`, a compile), so the mesh must
    be compiled and run in a process that has not used JAX yet, or the count set up front."""
    return (f" (JAX's CPU backend started before convc could ask for {count} host devices: compile and run"
            f" the mesh in a fresh process before anything uses JAX, or start Python with"
            f" XLA_FLAGS={HOST_DEVICE_FLAG}={count})")


def _slicer(array: np.ndarray) -> Callable[[Any], np.ndarray]:
    return lambda index: array[index]


@dataclass
class ShardedExecutable:
    """A PJRT executable compiled for `len(devices)` partitions, with its input and output layouts."""

    loaded: Any
    devices: list[Any]
    platform: str
    input_shardings: list[Any]  # jax Sharding per argument, as the executable expects it
    output_shardings: list[Any]

    def place(self, arrays: Sequence[np.ndarray]) -> list[Any]:
        """Global numpy arrays -> jax.Arrays split over the devices as the executable wants."""
        import jax

        placed = []
        with jax.enable_x64(True):  # f64 inputs stay f64
            for array, sharding in zip(arrays, self.input_shardings):
                placed.append(jax.make_array_from_callback(np.shape(array), sharding, _slicer(np.asarray(array))))
        return placed

    def run_on_device(self, placed: Sequence[Any]) -> list[list[Any]]:
        """Execute on placed arrays; per output, its per-device shards."""
        results = self.loaded.execute_sharded(list(placed))
        return list(results.disassemble_into_single_device_arrays())

    def assemble(self, shards: Sequence[Sequence[Any]], shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        """Per-device shards -> global numpy arrays, placed by each output's sharding."""
        outputs = []
        for pieces, sharding, shape in zip(shards, self.output_shardings, shapes):
            index_of = sharding.devices_indices_map(tuple(shape))
            first = np.asarray(pieces[0])
            out = np.empty(shape, first.dtype)
            for piece in pieces:
                (device,) = piece.devices()
                out[index_of[device]] = np.asarray(piece)
            outputs.append(out)
        return outputs

    def __call__(self, *arrays: np.ndarray, output_shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        return self.assemble(self.run_on_device(self.place(arrays)), output_shapes)

    def hlo_text(self) -> str:
        """The partitioned (per-device) HLO after XLA's passes."""
        return "\n".join(m.to_string() for m in self.loaded.hlo_modules())

    def memory_stats(self) -> Any:
        return self.loaded.get_compiled_memory_stats()


def compile_sharded(text: str, num_devices: int, platform: str | None = None) -> ShardedExecutable:
    """Compile StableHLO with Shardy annotations for `num_devices` partitions (SPMD, one replica)."""
    from jax._src import compiler
    from jax._src.lib import xla_client
    from jax._src.sharding_impls import GSPMDSharding

    if platform in (None, "cpu"):
        request_host_devices(num_devices)  # a no-op once JAX's backend is up
    client = _client(platform)
    devices = devices_for(num_devices, platform)
    assignment = np.array([d.id for d in devices]).reshape(1, num_devices)
    options = compiler.get_compile_options(num_replicas=1, num_partitions=num_devices, device_assignment=assignment)
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    device_list = xla_client.DeviceList(tuple(devices))
    loaded = client.compile_and_load(text, device_list, options)

    def shardings(protos: Sequence[Any] | None, count: int) -> list[Any]:
        if num_devices == 1 or not protos:  # no partitioner ran: everything on the one device
            return [GSPMDSharding.get_replicated(device_list)] * count
        if len(protos) == 1 and count > 1:  # XLA puts one sharding on a tuple whose elements agree
            protos = list(protos) * count
        return [GSPMDSharding(device_list, proto) for proto in protos]

    inputs = shardings(loaded.get_parameter_shardings(), _count(text, "args"))
    outputs = shardings(loaded.get_output_shardings(), _count(text, "results"))
    return ShardedExecutable(loaded, devices, str(client.platform), inputs, outputs)


def _count(text: str, what: str) -> int:
    """The number of arguments or results of `@main` in emitted StableHLO text."""
    from . import mlir

    module = mlir.parse_module(text)
    for op in module.body.operations:
        if op.operation.name == "func.func" and str(op.attributes["sym_name"]) == '"main"':
            function_type = op.attributes["function_type"].value
            return len(function_type.inputs if what == "args" else function_type.results)
    raise ValueError("no @main in the module")


def run_graph(graph: Any, text: str, inputs: Sequence[np.ndarray], platform: str | None = None,
              file: str | None = None) -> list[np.ndarray]:
    """`convc --run` of a graph with a mesh: compile for its N devices, run, assemble the
    outputs. Too few devices is a user error located at the model."""
    try:
        executable = compile_sharded(text, graph.mesh.size, platform)
    except TooFewDevicesError as err:
        raise ConvcError(f"--run: {err.message}", Location(file=file), "S9") from None
    return executable(*inputs, output_shapes=[v.type.shape for v in graph.outputs])
