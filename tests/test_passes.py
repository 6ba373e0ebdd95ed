"""Pass registry and pipelines: mlcir and upstream passes mixed, options, helpful errors."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import mlcir
import mlcir.passes
from mlcir.passes import build_pass_manager, get_pass, get_pipeline, parse_pipeline, run_pipeline
from mlcir.passes.registry import ModulePass, lazy_modules

MODULE = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
"""


def test_pipeline_text_parses_with_or_without_anchor():
    els = parse_pipeline("builtin.module(graph-to-loop, func.func(canonicalize{max-iterations=3}), cse)")
    assert [e.text() for e in els] == ["graph-to-loop", "func.func(canonicalize{max-iterations=3})", "cse"]
    assert [e.text() for e in parse_pipeline("graph-to-loop,cse")] == ["graph-to-loop", "cse"]


@pytest.mark.usefixtures("ctx")
def test_mixed_pipeline_runs_in_order():
    module = mlcir.parse(MODULE)
    run_pipeline(module, "graph-to-loop, func.func(canonicalize), cse")
    text = str(module)
    assert "graph." not in text.replace("graph.library", "")
    assert "call @matmul" in text and "linalg.matmul" in text


@pytest.mark.usefixtures("ctx")
def test_unknown_pass_lists_close_matches():
    with pytest.raises(mlcir.PassError, match="unknown pass or pipeline 'canonicalise'; did you "
                                              "mean: canonicalize"):
        build_pass_manager("canonicalise")
    with pytest.raises(mlcir.PassError, match="did you mean: graph-to-loop"):
        build_pass_manager("graph-to-lop")


@pytest.mark.usefixtures("ctx")
def test_bad_options_are_named():
    with pytest.raises(mlcir.PassError, match="pass 'graph-bind-params' has no option 'fil'"):
        build_pass_manager("graph-bind-params{fil=x.npz}")
    with pytest.raises(mlcir.PassError, match="pipeline 'mlcir-cpu' has no option 'thread'"):
        build_pass_manager("mlcir-cpu{thread=2}")
    with pytest.raises(mlcir.PassError, match="invalid pipeline element 'canonicalize{nope=1}'"):
        build_pass_manager("canonicalize{nope=1}")


@pytest.mark.usefixtures("ctx")
def test_pass_failure_is_reported_with_the_op_location():
    module = mlcir.parse("""
    func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
      %0 = "graph.exp"(%a) : (tensor<4xi32>) -> tensor<4xi32>
      return %0 : tensor<4xi32>
    }""", source_name="m.mlir")
    with pytest.raises(mlcir.LoweringError, match=r"m.mlir:3:\d+: error: 'graph.exp' needs a "
                                                  "floating-point element type, got i32"):
        run_pipeline(module, "graph-to-loop")


def test_registered_passes_have_names_and_summaries():
    for name in ("graph-to-loop", "graph-bind-params", "graph-lower-library-calls",
                 "mlcir-entry-points"):
        cls = get_pass(name)
        assert cls is not None and cls.name == name and cls.summary


LIT_PASSES = Path(__file__).resolve().parents[1] / "lit_tests" / "passes"


def _defined_passes() -> dict[str, tuple[type[ModulePass], str]]:
    """Every pass class of the passes package: name -> (class, module), importing them all."""
    found = {}
    for info in pkgutil.walk_packages(mlcir.passes.__path__, "mlcir.passes."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, ModulePass) and obj.name
                    and obj.__module__ == info.name):
                found[obj.name] = (obj, info.name)
    return found


def test_every_lazily_registered_name_is_what_its_module_defines():
    for name, module in lazy_modules().items():
        cls, pipeline = get_pass(name), get_pipeline(name)
        assert (cls is None) != (pipeline is None), f"{name}: one pass or one pipeline"
        if cls is not None:
            assert cls.name == name and cls.__module__ == module, (name, cls, module)
        else:
            assert pipeline.name == name


def test_every_pass_is_registered_lazily_and_has_a_filecheck_test():
    defined = _defined_passes()
    lazy = lazy_modules()
    for name, (cls, module) in defined.items():
        assert lazy.get(name) == module, \
            f"{cls.__name__} ({name}) is not declared in passes/__init__.py"
        assert (LIT_PASSES / f"{name}.mlir").is_file(), f"no lit_tests/passes/{name}.mlir"
