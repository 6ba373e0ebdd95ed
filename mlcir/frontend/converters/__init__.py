"""The converters, one module per family of ONNX ops; importing this registers them all."""

from . import elementwise, linear, logical, nn, reduce, tensor  # noqa: F401
