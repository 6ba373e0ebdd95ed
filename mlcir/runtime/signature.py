"""The numpy-level signature of a compiled function: names, shapes, dtypes, which arguments
it writes, and its symbolic dims; recorded before lowering and kept in a saved model's
metadata.

A dynamic dim has a symbol: on an argument, the name of the size it stands for (an ONNX
``dim_param`` such as ``N``; arguments that share a symbol must agree); on a result, an
expression over the arguments' symbols (``N``, ``2*N+1``) from which the host computes the
result's shape (:mod:`mlcir.runtime.shapes`), or None when it is not known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TensorArg:
    """One argument or result of a compiled function."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype
    # "input": read only; "inout": a memref argument the function writes (DPS, kept in place).
    kind: str = "input"
    # Per dim: its symbol (an argument) or expression (a result); None where static or
    # unknown. Empty when the tensor has no symbolic dim.
    symbols: tuple[str | None, ...] = ()

    def describe(self) -> str:
        symbols = self.symbols or (None,) * len(self.shape)
        dims = ", ".join(str(d) if d is not None else s or "?"
                         for d, s in zip(self.shape, symbols))
        return f"{self.dtype.name}[{dims}]"

    def to_json(self) -> dict[str, Any]:
        d = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype.name,
             "kind": self.kind}
        if self.symbols:
            d["symbols"] = list(self.symbols)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "TensorArg":
        return TensorArg(d["name"], tuple(d["shape"]), np.dtype(d["dtype"]),
                         d.get("kind", "input"), tuple(d.get("symbols", ())))


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple[TensorArg, ...]
    results: tuple[TensorArg, ...]
    # Static specialisations of a function with dynamic dims: (argument shapes, function
    # name); a call with exactly those shapes runs that function.
    specializations: tuple[tuple[tuple[tuple[int, ...], ...], str], ...] = ()

    def describe(self) -> str:
        """``main(x: float32[1, 784]) -> (float32[1, 10])``"""
        args = ", ".join(f"{a.name}: {a.describe()}" for a in self.args)
        return f"{self.name}({args}) -> ({', '.join(r.describe() for r in self.results)})"

    def to_json(self) -> dict[str, Any]:
        d = {"name": self.name, "args": [a.to_json() for a in self.args],
             "results": [r.to_json() for r in self.results]}
        if self.specializations:
            d["specializations"] = [{"shapes": [list(s) for s in shapes], "function": name}
                                    for shapes, name in self.specializations]
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Signature":
        return Signature(d["name"], tuple(TensorArg.from_json(a) for a in d["args"]),
                         tuple(TensorArg.from_json(r) for r in d["results"]),
                         tuple((tuple(tuple(s) for s in e["shapes"]), e["function"])
                               for e in d.get("specializations", ())))
