"""Ops declared as data, from which the IRDL definition and the Python verifier both come.

IRDL (MLIR 22.1) checks operand/result counts and attribute kinds, but it cannot compute a
result shape from operand shapes, and every IRDL constraint is a *variable*: all the values it
constrains must be equal (see docs/decisions.md). So each op declares its operands and
attributes (→ IRDL), and a Python ``infer`` function gives its result types (→ builders and the
Python verifier, which reports failures at the op's location).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from mlir import ir

# Attribute kinds: IRDL base constraint, Python reader, Python writer.
_ATTR_KINDS: dict[str, tuple[str, Callable[[ir.Attribute], Any], Callable[[Any], ir.Attribute]]] = {
    "int": ("#builtin.integer", lambda a: ir.IntegerAttr(a).value,
            lambda v: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))),
    "float": ("#builtin.float", lambda a: ir.FloatAttr(a).value,
              lambda v: ir.FloatAttr.get(ir.F64Type.get(), float(v))),
    "ints": ("#builtin.dense_array", lambda a: [int(x) for x in ir.DenseI64ArrayAttr(a)],
             lambda v: ir.DenseI64ArrayAttr.get([int(x) for x in v])),
    "floats": ("#builtin.dense_array", lambda a: [float(x) for x in ir.DenseF64ArrayAttr(a)],
               lambda v: ir.DenseF64ArrayAttr.get([float(x) for x in v])),
    "str": ("#builtin.string", lambda a: ir.StringAttr(a).value, lambda v: ir.StringAttr.get(v)),
    "type": ("#builtin.type", lambda a: ir.TypeAttr(a).value,
             lambda v: ir.TypeAttr.get(ir.Type.parse(v) if isinstance(v, str) else v)),
    "dense": ("#builtin.dense_elements", lambda a: a, lambda v: v),
}


@dataclass(frozen=True)
class AttrDef:
    """A required attribute of an op; ``kind`` is a key of the table above."""

    name: str
    kind: str
    doc: str = ""

    def read(self, attr: ir.Attribute) -> Any:
        return _ATTR_KINDS[self.kind][1](attr)

    def make(self, value: Any) -> ir.Attribute:
        if isinstance(value, ir.Attribute):
            return value
        return _ATTR_KINDS[self.kind][2](value)


@dataclass(frozen=True)
class TensorSpec:
    """What a verifier knows of a tensor type: the shape (``None`` = dynamic) and element type."""

    shape: tuple[int | None, ...]
    element_type: ir.Type

    @staticmethod
    def of(t: ir.Type) -> "TensorSpec":
        if not isinstance(t, ir.RankedTensorType):
            raise ShapeError(f"expected a ranked tensor, got '{t}'")
        rt = ir.RankedTensorType(t)
        return TensorSpec(tuple(None if rt.is_dynamic_dim(i) else rt.shape[i]
                                for i in range(rt.rank)), rt.element_type)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        return f"tensor<{dims}{self.element_type}>"

    def to_type(self) -> ir.Type:
        dyn = ir.ShapedType.get_dynamic_size()
        return ir.RankedTensorType.get([dyn if d is None else d for d in self.shape],
                                       self.element_type)


class ShapeError(Exception):
    """Raised by ``infer`` functions; the verifier turns it into a located diagnostic."""


# Fusion pattern kinds, from most to least fusible (TVM's OpPatternKind):
#   elementwise  same shape in and out, one element from one element (relu, exp);
#   broadcast    elementwise with numpy broadcasting of some operands (add, multiply);
#   injective    each output element reads one input element, anywhere (transpose, reshape);
#   reduction    reduces some axes (sum, softmax's parts);
#   anchor       a heavy op that takes elementwise epilogues (matmul, conv2d);
#   padding      its input written into a larger destination (a window's padding): joins
#                its producer's group, whatever it is, so the producer writes in place;
#   opaque       never fused.
PATTERNS = ("elementwise", "broadcast", "injective", "reduction", "anchor", "padding", "opaque")

InferFn = Callable[[list[TensorSpec], dict[str, Any]], list[TensorSpec]]


@dataclass(frozen=True)
class OpDef:
    """One op of an mlcir dialect."""

    dialect: str
    name: str
    operands: tuple[str, ...]
    infer: InferFn
    attrs: tuple[AttrDef, ...] = ()
    results: tuple[str, ...] = ("result",)
    summary: str = ""
    # Extra checks on the values of attributes, beyond their kinds.
    check: Callable[[list[TensorSpec], dict[str, Any]], None] | None = None
    # How the op fuses (TVM's OpPatternKind): one of PATTERNS.
    pattern: str = "opaque"
    # The op in numpy: ``evaluate(*arrays, **attrs)`` returns the result array (a tuple for
    # several results). Constant folding runs it; tests compare lowerings against it.
    evaluate: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"{self.full_name}: pattern {self.pattern!r} is not one of {PATTERNS}")

    @property
    def full_name(self) -> str:
        return f"{self.dialect}.{self.name}"

    def read_attrs(self, op: ir.Operation) -> dict[str, Any]:
        return {a.name: a.read(op.attributes[a.name]) for a in self.attrs}

    def irdl(self) -> str:
        """The ``irdl.operation`` text: one constraint variable per operand/result/attribute."""
        lines = [f"  irdl.operation @{self.name} {{"]
        names = []
        for i, operand in enumerate(self.operands):
            lines.append(f"    %o{i} = irdl.any")
            names.append(f"{operand}: %o{i}")
        if names:
            lines.append(f"    irdl.operands({', '.join(names)})")
        names = []
        for i, result in enumerate(self.results):
            lines.append(f"    %r{i} = irdl.any")
            names.append(f"{result}: %r{i}")
        if names:
            lines.append(f"    irdl.results({', '.join(names)})")
        if self.attrs:
            entries = []
            for i, attr in enumerate(self.attrs):
                lines.append(f'    %a{i} = irdl.base "{_ATTR_KINDS[attr.kind][0]}"')
                entries.append(f'"{attr.name}" = %a{i}')
            lines.append(f"    irdl.attributes {{{', '.join(entries)}}}")
        lines.append("  }")
        return "\n".join(lines)

    def verify(self, op: ir.Operation) -> str | None:
        """None if ``op`` is consistent with this definition, else the reason."""
        try:
            specs = [TensorSpec.of(v.type) for v in op.operands]
            attrs = self.read_attrs(op)
            if self.check:
                self.check(specs, attrs)
            expected = self.infer(specs, attrs)
        except ShapeError as e:
            return str(e)
        actual = [r.type for r in op.results]
        for i, (want, got) in enumerate(zip(expected, actual)):
            try:
                got_spec = TensorSpec.of(got)
            except ShapeError as e:
                return f"result #{i}: {e}"
            if not compatible(want, got_spec):
                return f"result #{i} has type '{got}' but the operands give '{want}'"
        return None


def compatible(a: TensorSpec, b: TensorSpec) -> bool:
    """Same element type and rank, and equal sizes wherever both are static."""
    if a.element_type != b.element_type or a.rank != b.rank:
        return False
    return all(x is None or y is None or x == y for x, y in zip(a.shape, b.shape))


def irdl_dialect(name: str, ops: Sequence[OpDef], extra: str = "") -> str:
    """The whole ``irdl.dialect`` text for a dialect's ops."""
    body = "\n".join(op.irdl() for op in ops)
    return f"irdl.dialect @{name} {{\n{body}{extra}\n}}\n"
