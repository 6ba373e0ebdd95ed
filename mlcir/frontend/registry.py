"""The converter table: every ONNX op type mlcir imports, with its converter class.

Importing the converter modules registers them (the :func:`~mlcir.frontend.converter.converter`
decorator); they import only the base module, never this one, so registration has no circle.
"""

from __future__ import annotations

from . import converters  # noqa: F401  (the modules register themselves)
from .converter import CONVERTERS, Converter


def converter_table() -> dict[str, type[Converter]]:
    """Every converter, by ONNX op type."""
    return CONVERTERS
