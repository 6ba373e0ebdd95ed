"""The ONNX frontend: ``from_onnx(model)`` imports an ONNX model into the ``graph`` dialect.

    from mlcir.frontend import from_onnx
    mod = from_onnx("model.onnx", shape_dict={"input": [1, 784]})
    ex = mlcir.build(mod)

One converter class per ONNX op, chosen by the model's ``ai.onnx`` opset (13 and newer);
nodes whose inputs are all constants are folded at import by onnx's reference evaluator; the
weights become bound constants. See docs/frontend.md.
"""

from __future__ import annotations

from mlcir.errors import FrontendError

from .importer import from_onnx
from .loader import MAX_OPSET, MIN_OPSET
from .converter import Converter
from .registry import converter_table


def supported_ops() -> dict[str, list[int]]:
    """ONNX op type -> the opsets at which its converter's implementations start."""
    return {name: cls.versions() for name, cls in sorted(converter_table().items())}


__all__ = ["Converter", "FrontendError", "MAX_OPSET", "MIN_OPSET", "from_onnx", "supported_ops"]
