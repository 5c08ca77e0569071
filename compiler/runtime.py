"""Compile StableHLO text with PJRT (through jaxlib) and run it on numpy arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

PLATFORMS = ("cpu", "gpu", "tpu")


def default_platform() -> str:
    """The best platform PJRT finds on this machine (what JAX would pick)."""
    import jax

    return jax.default_backend()


class PlatformUnavailableError(RuntimeError):
    """PJRT has no device of the asked-for platform on this machine: what was asked for is
    missing, convc is not at fault."""

    def __init__(self, platform: str, found: Sequence[str]):
        super().__init__(f"no {platform} device is available to PJRT here (found: {', '.join(found) or 'none'})")
        self.platform = platform


def available_platforms() -> list[str]:
    """The PJRT platforms this machine has, named as `--platform` names them ("gpu" for CUDA)."""
    from jax.extend import backend

    return sorted({str(client.platform) for client in backend.backends().values()})


def _client(platform: str | None) -> Any:
    from jax.extend import backend

    try:
        return backend.get_backend(platform)
    except RuntimeError:  # jax's wording differs by platform ("Unknown backend", "failed to initialize")
        found = available_platforms()
        if platform is None or platform in found:
            raise
        raise PlatformUnavailableError(platform, found) from None


def require_platform(platform: str | None) -> None:
    """Raise PlatformUnavailableError unless PJRT can run on `platform` here (None: the default)."""
    _client(platform)


def first_device(platform: str | None = None) -> Any:
    """The device convc runs on for `platform` (None: the default platform)."""
    return _client(platform).local_devices()[0]


def platform_name(platform: str | None = None) -> str:
    """The name of the PJRT platform `compile_stablehlo(text, platform)` runs on, e.g. "cpu"."""
    return str(_client(platform).platform)


@dataclass
class Executable:
    """A loaded PJRT executable plus the device it runs on."""

    loaded: Any
    device: Any
    platform: str

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        import jax

        with jax.enable_x64(True):  # else device_put narrows f64 inputs to f32 and execute rejects them
            buffers = [jax.device_put(a, self.device) for a in arrays]
        outputs = self.loaded.execute(buffers)
        return [np.asarray(out) for out in outputs]

    def run_on_device(self, buffers: Sequence[Any]) -> list[Any]:
        """Execute on buffers already on the device (benchmarks); returns device buffers."""
        return self.loaded.execute(list(buffers))

    def hlo_text(self) -> str:
        return "\n".join(m.to_string() for m in self.loaded.hlo_modules())


def compile_stablehlo(text: str | bytes, platform: str | None = None, xla_options: Mapping[str, str] | None = None) -> Executable:
    """Compile a StableHLO module, as text or MLIR bytecode, for the first device of `platform`;
    `xla_options` are XLA debug options for this compile (`xla_cpu_...`: what XLA_FLAGS sets for a process)."""
    from jax._src import compiler
    from jax._src.lib import xla_client

    client = _client(platform)
    device = client.local_devices()[0]
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1, env_options_overrides=dict(xla_options or {}))
    loaded = client.compile_and_load(text, xla_client.DeviceList((device,)), options)
    return Executable(loaded, device, client.platform)
