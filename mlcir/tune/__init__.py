"""Tuning: measuring scheduled kernels and searching their design spaces."""

from __future__ import annotations

from .measure import evaluate, random_inputs, random_search

__all__ = ["evaluate", "random_inputs", "random_search"]
