"""The converters, one module per family of ONNX ops; importing this registers them all."""

from . import (  # noqa: F401
    composite, einsum, elementwise, layout, linear, logical, nn, normalization, recurrent,
    quantize, reduce, resize, scatter_gather, selection, tensor, triangular,
)
