"""The real MLIR parser and verifier from jaxlib, and StableHLO portable artifacts."""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping
from typing import Any

import numpy as np

from .diagnostics import InternalError


@functools.cache
def _modules() -> tuple[Any, Any, Any]:
    # Imported lazily: jaxlib takes a while to load and `--emit=convc` needs none of it.
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    return jax_mlir, ir, stablehlo


def load() -> None:
    """Import jaxlib's MLIR (and with it JAX) now, so that `--timing` shows the import as
    its own phase rather than inside the first parse."""
    _modules()


def context(allow_unregistered: bool = False, quant: bool = False) -> Any:
    """A context with func, stablehlo, chlo and friends loaded, as JAX makes it; with
    `quant`, MLIR's quant dialect (`!quant.uniform` types) too."""
    jax_mlir, _, _ = _modules()
    ctx = jax_mlir.make_ir_context()
    ctx.allow_unregistered_dialects = allow_unregistered
    if quant:
        _load_quant_dialect(ctx)
    return ctx


_QUANT_PROBE = """func.func @main(%arg0: tensor<1x!quant.uniform<i8:f32, 1.0>>) -> tensor<1x!quant.uniform<i8:f32, 1.0>> {
  return %arg0 : tensor<1x!quant.uniform<i8:f32, 1.0>>
}"""


@functools.cache
def _quant_probe_artifact() -> bytes:
    _, _, stablehlo = _modules()
    return bytes(stablehlo.serialize_portable_artifact_str(_QUANT_PROBE, stablehlo.get_current_version()))


def _load_quant_dialect(ctx: Any) -> None:
    """jaxlib's Python context registers no quant dialect, but StableHLO's own deserializer
    (which parses in a context that has it) loads it into the context it reads into: reading
    a one-function artifact with a quantized type makes the dialect available to the parser."""
    from jax._src.lib import _jax

    with ctx:
        _jax.mlir.deserialize_portable_artifact(_quant_probe_artifact(), ctx)


def parse_module(text: str, allow_unregistered: bool = False) -> Any:
    """Parse and verify; raises ValueError with MLIR's diagnostics on failure. MLIR's parser
    runs the verifier on what it parsed (its default), so a parsed module is a verified one
    and is not verified a second time. Quantized types load the quant dialect first."""
    _, ir, _ = _modules()
    with context(allow_unregistered, quant="!quant." in text):
        try:
            return ir.Module.parse(text)
        except ir.MLIRError as err:
            raise ValueError(str(err)) from None


def verify_stablehlo(text: str) -> None:
    """Emitted text must parse and verify; failing that is a convc bug."""
    _verified(text)


def bound_module(text: str, arrays: Mapping[str, np.ndarray]) -> Any:
    """Parse and verify `text`, a module emitted with `bound` constants (`emit_stablehlo`),
    then give each marked constant its array straight from its buffer: no weight goes
    through hex. The placeholders have the arrays' types, so the module stays the verified one."""
    module = _verified(text)
    _, ir, _ = _modules()
    with module.context:
        unbound = dict(arrays)
        for op in _main_body(module):
            if "convc.bound" in op.attributes:
                array = unbound.pop(ir.StringAttr(op.attributes["convc.bound"]).value)
                element = ir.RankedTensorType(op.result.type).element_type
                op.attributes["value"] = ir.DenseElementsAttr.get(np.ascontiguousarray(array), type=element)
                del op.attributes["convc.bound"]
    if unbound:
        raise InternalError(f"bound constants missing from the emitted module: {', '.join(unbound)}")
    return module


def bound_bytecode(text: str, arrays: Mapping[str, np.ndarray]) -> bytes:
    """`bound_module` as MLIR bytecode, what PJRT compiles (its constants raw bytes)."""
    return _bytecode(bound_module(text, arrays))


def bound_portable_artifact(text: str, arrays: Mapping[str, np.ndarray], target_version: str | None = None) -> bytes:
    """`bound_module` as a versioned StableHLO artifact (`portable_artifact`), its constants raw bytes."""
    _, _, stablehlo = _modules()
    module = bound_module(text, arrays)
    return bytes(stablehlo.serialize_portable_artifact(module, target_version or stablehlo.get_current_version()))


def _verified(text: str) -> Any:
    try:
        return parse_module(text)
    except ValueError as err:
        first = str(err).splitlines()
        raise InternalError("emitted StableHLO does not verify: " + " | ".join(first[:4])) from None


def _main_body(module: Any) -> list[Any]:
    """The operations of the module's functions' entry blocks, where the emitter puts every constant."""
    return [op for func in module.body.operations if func.operation.name == "func.func"
            for op in func.regions[0].blocks[0].operations]


def _bytecode(module: Any) -> bytes:
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


def portable_artifact(text: str, target_version: str | None = None, sharded: bool = False) -> bytes:
    """Versioned StableHLO bytecode (VHLO), readable by later StableHLO consumers. A
    `sharded` module keeps its Shardy ops through the serializer `jax.export` uses (mixed
    serialization: StableHLO as VHLO, `sdy` as is); the plain call refuses `sdy` ops."""
    _, ir, stablehlo = _modules()
    version = target_version or stablehlo.get_current_version()
    if not sharded:
        return bytes(stablehlo.serialize_portable_artifact_str(text, version))
    from jax._src.lib import _jax

    with context():
        module = ir.Module.parse(text)
        return bytes(_jax.mlir.serialize_portable_artifact(module, version, True))


def eval_module(text: str, arrays: list[Any]) -> list[Any]:
    """Run the StableHLO reference interpreter (an oracle independent of XLA)."""
    import numpy as np

    _, ir, stablehlo = _modules()
    with context():
        module = ir.Module.parse(text)
        args = [ir.DenseElementsAttr.get(np.ascontiguousarray(a)) for a in arrays]
        return [np.array(r) for r in stablehlo.eval_module(module, args)]
