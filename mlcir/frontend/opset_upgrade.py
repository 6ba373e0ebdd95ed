"""Models written at ai.onnx opsets 7 to 12, converted to opset 13 on import.

Most of the ONNX zoo (resnet50-v2-7, MobileNet, SqueezeNet, VGG, BERT-SQuAD) is opset 7-12;
the converters start at 13, where attributes such as Slice's starts, Pad's pads and the
reductions' axes had become inputs. Upstream ``onnx.version_converter`` does the conversion;
what it gets wrong or refuses is fixed here first (docs/frontend.md#older-opsets), and the
user is told once with a warning (the CLI prints it on stderr).
"""

from __future__ import annotations

import warnings

import onnx
from onnx import version_converter

#: The oldest ai.onnx opset imported (by conversion).
OLDEST_OPSET = 7


class OpsetConverted(UserWarning):
    """An older-opset model was converted on import."""


def upgrade(model: onnx.ModelProto, opset: int, target: int, where: str) -> onnx.ModelProto:
    """``model`` (ai.onnx ``opset`` < ``target``) converted to ``target``. Raises ValueError
    with the converter's words when it cannot be converted."""
    model = _before_conversion(model, opset)
    try:
        converted = version_converter.convert_version(model, target)
    except Exception as e:  # noqa: BLE001 - the converter raises bare RuntimeErrors
        raise ValueError(str(e).strip().splitlines()[0] if str(e).strip() else
                         type(e).__name__) from None
    if converted.ir_version < 7:  # opset 13 needs IR 7; the converter keeps the old one
        converted.ir_version = 7
    warnings.warn(f"{where}: ai.onnx opset {opset} model converted to opset {target} on "
                  "import (onnx.version_converter)", OpsetConverted, stacklevel=4)
    return converted


def _before_conversion(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """A copy of ``model`` with what the converter mishandles rewritten."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for node in out.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "BatchNormalization" and opset < 9:
            # spatial=1 (the default and the only form exporters wrote) is what opset 9
            # made the only meaning; the converter refuses the attribute.
            _drop_attributes(node, "spatial", "is_test", "consumed_inputs")
        if node.op_type == "Dropout" and opset < 10:
            _drop_attributes(node, "is_test")
    return out


def _drop_attributes(node: onnx.NodeProto, *names: str) -> None:
    kept = [a for a in node.attribute if a.name not in names]
    del node.attribute[:]
    node.attribute.extend(kept)


__all__ = ["OLDEST_OPSET", "OpsetConverted", "upgrade"]
