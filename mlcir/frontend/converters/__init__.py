"""The converters, one module per family of ONNX ops; importing this registers them all."""

from . import elementwise, linear, nn, reduce, tensor  # noqa: F401
