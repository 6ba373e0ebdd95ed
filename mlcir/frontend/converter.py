"""The converter base: one class per ONNX op, one implementation per opset where the op changed.

In the spirit of TVM's ``OnnxOpConverter``: a converter class defines ``_impl_v<N>`` class
methods, and a model of ``ai.onnx`` opset S uses the one with the largest N <= S (so
``ReduceMean._impl_v13`` reads ``axes`` from an attribute and ``_impl_v18`` from an input).
Before anything is built, :meth:`Converter.check` says what a converter cannot do with a given
node (an attribute value it does not support, an input that must be a constant and is not), so
the importer can list every problem of a model at once.

Converter modules (``converters/``) import only this module and the builder; the table of them
all is :func:`mlcir.frontend.registry.converter_table`, which imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Union

import numpy as np
import onnx
from mlir import ir

from .loader import Shape

#: A value during import: a constant (known at import time) or an SSA value of the graph.
Value = Union[np.ndarray, ir.Value]


@dataclass
class InputInfo:
    """What is known of one node input before anything is built."""

    name: str                                 # "" for an omitted optional input
    constant: np.ndarray | None = None        # its value, if known at import time
    type: tuple[Shape, np.dtype] | None = None  # from ONNX shape inference (or the constant)

    @property
    def present(self) -> bool:
        return bool(self.name)

    @property
    def shape(self) -> Shape | None:
        return None if self.type is None else self.type[0]

    @property
    def rank(self) -> int | None:
        return None if self.type is None else len(self.type[0])


@dataclass
class Node:
    """An ONNX node with its attributes decoded and what is known of its inputs."""

    proto: onnx.NodeProto
    index: int
    opset: int
    inputs: list[InputInfo] = field(default_factory=list)

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def domain(self) -> str:
        return self.proto.domain or "ai.onnx"

    @property
    def key(self) -> str:
        """The converter table's key: the op type, ``<domain>.<op type>`` outside ai.onnx
        (``com.microsoft.QLinearAdd``)."""
        return self.op_type if self.domain == "ai.onnx" else f"{self.domain}.{self.op_type}"

    @property
    def label(self) -> str:
        """The node's name, or ``<op_type>#<index>`` for an unnamed node."""
        return self.proto.name or f"{self.op_type}#{self.index}"

    @property
    def outputs(self) -> list[str]:
        return list(self.proto.output)

    def describe(self) -> str:
        return f"node '{self.label}' ({self.op_type}, opset {self.opset})"

    @cached_property
    def attrs(self) -> dict[str, Any]:
        out = {}
        for a in self.proto.attribute:
            value = onnx.helper.get_attribute_value(a)
            out[a.name] = value.decode() if isinstance(value, bytes) else value
        return out

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, i: int) -> InputInfo:
        """Input ``i``, or an absent one when the node has fewer inputs."""
        return self.inputs[i] if i < len(self.inputs) else InputInfo("")


class Converter:
    """Base class of the converters. Subclasses define ``_impl_v<N>(cls, cx, node, inputs)``,
    which builds the op at the builder ``cx`` (a :class:`~mlcir.frontend.builder.GraphBuilder`)
    from ``inputs`` (one :data:`Value` per node input, ``None`` when omitted) and returns the
    values of the node's outputs (a list, or one value)."""

    #: The ONNX op type (defaults to the class name).
    op_type: ClassVar[str] = ""
    #: The graph op of a converter family's shared ``_impl`` (Unary, the reductions, ...).
    graph_op: ClassVar[str] = ""
    #: The graph ops it may build (a node is refused while one of them is missing); by
    #: default ``graph_op`` alone.
    graph_ops: ClassVar[tuple[str, ...]] = ()
    #: Inputs that must be known at import time: index -> role, e.g. {1: "shape"}. Use
    #: :meth:`constant_inputs` when it depends on the opset.
    constants: ClassVar[dict[int, str]] = {}
    #: Whether the op means the same on unsigned integer inputs, which mlcir stores as the
    #: signless integers of their width (bit patterns: Add, BitwiseAnd, Reshape, Equal...);
    #: a node of another op with an unsigned input is refused.
    unsigned_inputs: ClassVar[bool] = False

    @classmethod
    def needed_graph_ops(cls) -> tuple[str, ...]:
        return cls.graph_ops or ((cls.graph_op,) if cls.graph_op else ())

    @classmethod
    def versions(cls) -> list[int]:
        return sorted(int(name[len("_impl_v"):]) for name in dir(cls)
                      if name.startswith("_impl_v"))

    @classmethod
    def impl(cls, opset: int) -> Callable[..., Any] | None:
        usable = [v for v in cls.versions() if v <= opset]
        return getattr(cls, f"_impl_v{max(usable)}") if usable else None

    @classmethod
    def constant_inputs(cls, node: Node) -> dict[int, str]:
        return cls.constants

    @classmethod
    def check(cls, node: Node) -> list[str]:
        """What this converter cannot do with ``node`` (empty when it can)."""
        return []


CONVERTERS: dict[str, type[Converter]] = {}


def converter(cls: type[Converter]) -> type[Converter]:
    """Class decorator: register the converter of ``cls.op_type`` (or the class name)."""
    if not cls.op_type:
        cls.op_type = cls.__name__
    if not cls.versions():
        raise TypeError(f"converter {cls.__name__} defines no _impl_v<N>")
    CONVERTERS[cls.op_type] = cls
    return cls


# -- small helpers shared by converters' checks ---------------------------------------------

def require(condition: bool, message: str, problems: list[str]) -> None:
    if not condition:
        problems.append(message)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative; ValueError otherwise."""
    if not -rank <= axis < rank:
        raise ValueError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    out = sorted({normalize_axis(int(a), rank, what) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"{what} {list(axes)} repeat an axis")
    return out
