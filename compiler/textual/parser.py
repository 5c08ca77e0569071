"""convc text -> Graph. A small recursive-descent reader of the subset the printer writes.

Our own reader (rather than MLIR's) keeps SSA names, which become node and input
names; MLIR itself parses the same text with unregistered dialects allowed (tested).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..diagnostics import ConvcError, Location, suggest
from ..dtypes import QuantTypeError, canonical_dtype, is_quantized, numpy_dtype, tensor_element_type
from ..ir import Graph, Op, TensorType, Value
from ..ops import OPS
from ..ops.attr_kinds import parse_dimension_numbers
from ..ops.base import KNOWN_OP
from ..sharding import MESH_SYMBOL, Mesh, ShardingSpec, parse_sdy_mesh, parse_sdy_sharding, verify_shardings
from ..verify import check_result_type, coerce_attrs, infer_type

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<type>tensor<(?:\d+x)*(?:[a-wyz]+\d*|!quant\.uniform<[^<>]*(?:<[^<>]*>[^<>]*)?>)>)
  | (?P<array>array<i64(?::[^>]*)?>)
  | (?P<dense>dense<[^>]*>)
  | (?P<resource>dense_resource<[^>]*>)
  | (?P<dims>\#convc\.dims<[^>]*->[^>]*>)
  | (?P<sdy>\#sdy\.sharding(?:_per_value<\[<@[A-Za-z0-9_$.\-]+,\s*\[[^\]]*\]>\]>|<@[A-Za-z0-9_$.\-]+,\s*\[[^\]]*\]>))
  | (?P<mesh><\[[^\]]*\]>)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<value>%[A-Za-z0-9_$.\-]+)
  | (?P<symbol>@(?:[A-Za-z0-9_$.\-]+|"(?:[^"\\]|\\.)*"))
  | (?P<float>[-+]?\d+\.\d*(?:[eE][-+]?\d+)?)
  | (?P<int>[-+]?\d+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<punct>->|[(){}\[\],:=])
    """,
    re.VERBOSE,
)


class _Token:
    __slots__ = ("kind", "text", "line", "col")

    def __init__(self, kind: str, text: str, line: int, col: int):
        self.kind, self.text, self.line, self.col = kind, text, line, col


def _tokenize(text: str, file: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ConvcError(f"unexpected character {text[pos]!r}", Location(file=file, line=line, col=pos - line_start + 1),
                             "X1")
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), line, pos - line_start + 1))
        newlines = match.group().count("\n")
        if newlines:
            line += newlines
            line_start = match.start() + match.group().rindex("\n") + 1
        pos = match.end()
    tokens.append(_Token("eof", "", line, pos - line_start + 1))
    return tokens


Item = TypeVar("Item")

_ATTR_INT = "i64"  # element type of integer-row attributes (padding, padding_config)
# Integer element types a dense attribute may hold though no convc tensor does: read, so that
# the op that takes the array (a constant) names its own rule (constant.C1) rather than X3.
_ATTR_ONLY_INTS: dict[str, np.dtype] = {"ui16": np.dtype(np.uint16), "ui32": np.dtype(np.uint32), "ui64": np.dtype(np.uint64)}


def _unquote(text: str) -> str:
    """Inverse of `attrs.quote`: `\\n`, `\\t`, two-hex-digit escapes, and `\\` before any other character."""
    return re.sub(r"\\([0-9A-Fa-f]{2}|.)", _unescape, text[1:-1])


def _unescape(match: re.Match[str]) -> str:
    escaped = match.group(1)
    if len(escaped) == 2:
        return chr(int(escaped, 16))
    return {"n": "\n", "t": "\t"}.get(escaped, escaped)


def _by_kind(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Each declared attribute's generic value as its kind reads it (unknown names are left
    for `coerce_attrs` to diagnose)."""
    specs = OPS[kind].attrs
    return {name: specs[name].kind.parse(value) if name in specs else value for name, value in raw.items()}


def _symbol_name(text: str) -> str:
    """`@name` or `@"any name"` -> the name."""
    return _unquote(text[1:]) if text.startswith('@"') else text[1:]


_SHAPE = re.compile(r"((?:\d+x)*)(.*)", re.S)


def _tensor_type(text: str) -> TensorType:
    """`tensor<2x3xf32>` or `tensor<2x!quant.uniform<...>>`, the element type as written."""
    match = _SHAPE.fullmatch(text[len("tensor<"):-1])
    assert match is not None
    return TensorType(tuple(int(d) for d in match[1].split("x")[:-1]), match[2])


class _Parser:
    def __init__(self, text: str, file: str):
        self.file = file
        self.tokens = _tokenize(text, file)
        self.pos = 0
        self.values: dict[str, Value] = {}
        self.names: set[str] = set()  # value names (SSA id or loc("...")): node names, unique

    # --- token helpers -------------------------------------------------------------

    @property
    def tok(self) -> _Token:
        return self.tokens[self.pos]

    def loc(self, tok: _Token | None = None) -> Location:
        tok = tok or self.tok
        return Location(file=self.file, line=tok.line, col=tok.col)

    def error(self, message: str, constraint: str, tok: _Token | None = None) -> ConvcError:
        return ConvcError(message, self.loc(tok), constraint)

    def next(self) -> _Token:
        tok = self.tok
        self.pos += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.tok.text == text and self.tok.kind in ("punct", "word"):
            self.pos += 1
            return True
        return False

    def expect(self, text: str) -> _Token:
        if not self.accept(text):
            found = self.tok.text or "end of input"
            raise self.error(f"expected '{text}', found '{found}'", "X2")
        return self.tokens[self.pos - 1]

    def expect_kind(self, kind: str, what: str) -> _Token:
        if self.tok.kind != kind:
            raise self.error(f"expected {what}, found '{self.tok.text or 'end of input'}'", "X2")
        return self.next()

    def comma_separated(self, close: str, item: Callable[[], Item]) -> list[Item]:
        """`item`s separated by commas, up to and including `close`."""
        items: list[Item] = []
        while not self.accept(close):
            if items:
                self.expect(",")
            items.append(item())
        return items

    def type(self) -> TensorType:
        tok = self.expect_kind("type", "a tensor type")
        t = _tensor_type(tok.text)
        if is_quantized(t.dtype):
            return self.quantized(t, tok)
        if canonical_dtype(t.dtype) is None:
            raise self.error(f"unknown element type '{t.dtype}'", "X3", tok)
        return t

    def quantized(self, t: TensorType, tok: _Token) -> TensorType:
        """A quantized tensor type, its element type canonicalized and checked (quant.C1..C13)."""
        try:
            name = tensor_element_type(t.dtype, t.shape)
        except QuantTypeError as err:
            raise self.error(err.message, err.constraint or "X3", tok) from None
        assert name is not None
        return TensorType(t.shape, name)

    def attr_type(self) -> TensorType:
        """A dense attribute's type: a tensor type, or i64 rows (padding, padding_config)."""
        if self.tok.kind == "type" and _tensor_type(self.tok.text).dtype in (_ATTR_INT, *_ATTR_ONLY_INTS):
            return _tensor_type(self.next().text)
        return self.type()

    def type_list(self) -> list[TensorType]:
        if not self.accept("("):
            return [self.type()]
        return self.comma_separated(")", self.type)

    def name_loc(self, default: str) -> str:
        """An optional `loc("name")` that overrides the SSA name."""
        if self.tok.text != "loc":
            return default
        self.next()
        self.expect("(")
        name = _unquote(self.expect_kind("string", "a quoted location name").text)
        self.expect(")")
        return name

    # --- structure -------------------------------------------------------------------

    def module(self) -> Graph:
        name = "main"
        mesh = None
        wrapped = self.accept("module")
        if wrapped:
            if self.tok.kind == "symbol":
                name = _symbol_name(self.next().text)
            self.expect("{")
            mesh = self.mesh()
        graph = self.function(name)
        if mesh is not None or any(v.sharding is not None for v in graph.values()):  # --- sharding ---
            graph.mesh = mesh
            verify_shardings(graph)
        if wrapped:
            self.expect("}")
        if self.tok.kind != "eof":
            raise self.error(f"expected end of input, found '{self.tok.text}'", "X2")
        return graph

    def function(self, module_name: str) -> Graph:
        self.expect("func.func")
        self.accept("public")
        self.accept("private")
        symbol = self.expect_kind("symbol", "a function name")
        graph = Graph(module_name if module_name != "main" else _symbol_name(symbol.text))
        self.expect("(")
        while not self.accept(")"):
            if graph.inputs:
                self.expect(",")
            tok = self.expect_kind("value", "an argument name")
            self.expect(":")
            t = self.type()
            sharding = self.sharding_attrs()
            name = self.name_loc(tok.text[1:])
            self.define(tok, Value(name, t))
            self.values[tok.text].sharding = sharding
            graph.inputs.append(self.values[tok.text])
            graph.input_locs[name] = self.loc(tok)
        self.expect("->")
        result_types, result_shardings = self.result_types()
        self.expect("{")
        while self.tok.kind == "value":
            graph.ops.append(self.operation())
        return_tok = self.tok
        if not (self.accept("func.return") or self.accept("return")):
            raise self.error(f"expected an op or 'func.return', found '{self.tok.text}'", "X2")
        outputs = [self.use(self.expect_kind("value", "a result name"))]
        while self.accept(","):
            outputs.append(self.use(self.expect_kind("value", "a result name")))
        self.expect(":")
        declared = [self.type()]
        while self.accept(","):
            declared.append(self.type())
        if [v.type for v in outputs] != declared or declared != result_types:
            raise self.error("return types do not match the function's result types", "X7", return_tok)
        graph.outputs = outputs
        for value, sharding in zip(outputs, result_shardings):
            value.sharding = sharding or value.sharding
        self.expect("}")
        return graph

    # --- sharding (convc.sharding): the mesh op, `{sdy.sharding = ...}` on arguments and results ---

    def mesh(self) -> Mesh | None:
        if not self.accept("sdy.mesh"):
            return None
        symbol = self.expect_kind("symbol", "@mesh")
        if _symbol_name(symbol.text) != MESH_SYMBOL:
            raise self.error(f"the mesh must be named @{MESH_SYMBOL}", "X10", symbol)
        self.expect("=")
        body = self.expect_kind("mesh", 'a mesh like <["data"=4, "space"=2]>')
        return parse_sdy_mesh(body.text, self.loc(body))

    def sharding_attrs(self) -> ShardingSpec | None:
        if self.tok.text != "{":
            return None
        self.next()
        self.expect("sdy.sharding")
        self.expect("=")
        tok = self.expect_kind("sdy", "a #sdy.sharding<@mesh, [...]> attribute")
        self.expect("}")
        return parse_sdy_sharding(tok.text, self.loc(tok))

    def result_types(self) -> tuple[list[TensorType], list[ShardingSpec | None]]:
        if not self.accept("("):
            return [self.type()], [None]
        types: list[TensorType] = []
        shardings: list[ShardingSpec | None] = []
        while not self.accept(")"):
            if types:
                self.expect(",")
            types.append(self.type())
            shardings.append(self.sharding_attrs())
        return types, shardings

    def define(self, tok: _Token, value: Value) -> None:
        if tok.text in self.values:
            raise self.error(f"'{tok.text}' is defined twice", "X5", tok)
        if value.name in self.names:
            raise self.error(f"name '{value.name}' is defined twice", "X5", tok)
        self.names.add(value.name)
        self.values[tok.text] = value

    def use(self, tok: _Token) -> Value:
        value = self.values.get(tok.text)
        if value is None:
            raise self.error(f"use of undefined value '{tok.text}'", "X4", tok)
        return value

    def operation(self) -> Op:
        result_tok = self.next()
        self.expect("=")
        kind_tok = self.expect_kind("string", 'a quoted op name like "convc.conv"')
        full = _unquote(kind_tok.text)
        kind = full.removeprefix("convc.")
        if not full.startswith("convc.") or kind not in OPS:
            raise ConvcError(f"unknown op '{full}'{suggest(kind, OPS)}", self.loc(kind_tok), KNOWN_OP)
        self.expect("(")
        operands = self.comma_separated(")", lambda: self.use(self.expect_kind("value", "an operand")))
        raw = self.attr_dict() if self.tok.text == "{" else {}
        sharding = raw.pop("sdy.sharding", None)
        if sharding is not None and not isinstance(sharding, ShardingSpec):
            raise self.error("sdy.sharding must be a #sdy.sharding_per_value<[<@mesh, [...]>]> attribute", "X10", kind_tok)
        self.expect(":")
        operand_types = self.type_list()
        self.expect("->")
        result_type = self.type()
        name = self.name_loc(result_tok.text[1:])
        if operand_types != [v.type for v in operands]:
            raise self.error("operand types do not match the operands' declared types", "X6", kind_tok)
        loc = Location(file=self.file, line=result_tok.line, col=result_tok.col, node=name, op=kind)
        attrs = coerce_attrs(kind, _by_kind(kind, raw), loc)
        inferred = infer_type(kind, operand_types, attrs, loc)
        check_result_type(kind, result_type, inferred, loc)
        op = Op(kind, operands, attrs, name, result_type, loc)
        op.result.sharding = sharding
        self.define(result_tok, op.result)
        return op

    # --- attributes ---------------------------------------------------------------------

    def attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        return dict(self.comma_separated("}", self.attr_entry))

    def attr_entry(self) -> tuple[str, Any]:
        key = self.expect_kind("word", "an attribute name")
        self.expect("=")
        return key.text, self.attr_value()

    def attr_value(self) -> Any:
        tok = self.next()
        if tok.kind == "int":
            self.typed_suffix()
            return int(tok.text)
        if tok.kind == "float":
            self.typed_suffix()
            return float(tok.text)
        if tok.kind == "string":
            return _unquote(tok.text)
        if tok.kind == "array":
            body = tok.text[len("array<i64"):-1].lstrip(":")
            try:
                return tuple(int(x) for x in body.split(",") if x.strip())
            except ValueError:
                raise self.error(f"malformed integer array '{tok.text}'", "X8", tok) from None
        if tok.kind == "sdy":
            return parse_sdy_sharding(tok.text, self.loc(tok))
        if tok.kind == "dims":
            try:
                return parse_dimension_numbers(tok.text[len("#convc.dims<"):-1])
            except ValueError as err:
                raise self.error(str(err), "X8", tok) from None
        if tok.kind == "dense":
            self.expect(":")
            return self.dense(tok, self.attr_type())
        if tok.kind == "resource":
            raise self.error("this constant was elided when the IR was printed (dense_resource<__elided__>), so its value "
                             "is lost: print the IR again with its constants whole (convc --print-constants-whole)", "X9", tok)
        if tok.text == "[":
            return self.comma_separated("]", self.attr_value)
        if tok.text in ("true", "false"):
            return tok.text == "true"
        if tok.kind == "word" and canonical_dtype(tok.text):
            return tok.text
        raise self.error(f"unexpected attribute value '{tok.text}'", "X8", tok)

    def typed_suffix(self) -> None:
        if self.accept(":"):
            self.expect_kind("word", "an element type")

    def dense(self, tok: _Token, t: TensorType) -> np.ndarray:
        body = tok.text[len("dense<"):-1].strip()
        dtype = _ATTR_ONLY_INTS.get(t.dtype) or numpy_dtype(t.dtype)
        try:
            if body.startswith('"0x'):
                array = np.frombuffer(bytes.fromhex(body[3:-1]), dtype=dtype.newbyteorder("<")).astype(dtype)
            elif not body:
                array = np.zeros((0,), dtype)
            else:
                import json

                array = np.array(json.loads(body), dtype=np.float64 if t.dtype[0] in "fb" else np.int64).astype(dtype)
            if array.size == 1 and t.num_elements() != 1:
                array = np.full(t.shape, array.reshape(()), dtype)
            return array.reshape(t.shape)
        except (ValueError, TypeError) as err:
            raise self.error(f"malformed dense literal: {err}", "X8", tok) from None


# What StableHLO text has and convc text never does: an op in MLIR's pretty form of another
# dialect (`%0 = stablehlo.add ...`), else the result names JAX and convc's emitter write on
# every module (`jax.result_info`). (A generic `"stablehlo.add"(...)` alone in convc text is
# an unknown op, A7.)
_FOREIGN_MLIR = (re.compile(r"^[ \t]*(?:%[^\s=]+[ \t]*=[ \t]*)?((?:stablehlo|chlo|mhlo)\.)", re.M),
                 re.compile(r"(jax\.result_info)"))


def parse_ir(text: str, file: str = "<input>") -> Graph:
    """Read convc text (as printed by `print_graph`) into a verified Graph. Text that fails to
    parse because it is StableHLO (convc's own output, fed back) is told so [X11]."""
    try:
        return _Parser(text, file).module()
    except ConvcError:
        _refuse_stablehlo(text, file)
        raise


def _refuse_stablehlo(text: str, file: str) -> None:
    match = next((found for pattern in _FOREIGN_MLIR if (found := pattern.search(text)) is not None), None)
    if match is None:
        return
    start = match.start(1)
    line, col = text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
    raise ConvcError("this is StableHLO (MLIR, as convc emits it), not a convc model: convc reads JSON models and convc IR "
                     "(what --emit convc writes)", Location(file=file, line=line, col=col), "X11") from None
