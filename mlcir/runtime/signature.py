"""The numpy-level signature of a compiled function: names, shapes, dtypes, and which
arguments it writes; recorded before lowering and kept in a saved model's metadata."""

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

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype.name}[{dims}]"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype.name,
                "kind": self.kind}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "TensorArg":
        return TensorArg(d["name"], tuple(d["shape"]), np.dtype(d["dtype"]), d.get("kind", "input"))


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple[TensorArg, ...]
    results: tuple[TensorArg, ...]

    def describe(self) -> str:
        """``main(x: float32[1, 784]) -> (float32[1, 10])``"""
        args = ", ".join(f"{a.name}: {a.describe()}" for a in self.args)
        return f"{self.name}({args}) -> ({', '.join(r.describe() for r in self.results)})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": [a.to_json() for a in self.args],
                "results": [r.to_json() for r in self.results]}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Signature":
        return Signature(d["name"], tuple(TensorArg.from_json(a) for a in d["args"]),
                         tuple(TensorArg.from_json(r) for r in d["results"]))
