"""Helpers for tests and benchmarks (ONNX model builders with onnxruntime references)."""
