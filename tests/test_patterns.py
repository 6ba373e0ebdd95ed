"""The pattern API: what matches and what does not (shared operands, commutative ops, use
counts, attributes, types, constants, alternatives), rewrites (numbers unchanged, declined
matches leave no trace, bad builders are named), the ewise_fma pass and the docs' example."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import mlcir
from mlcir.dialects import graph
from mlcir.passes import run_pipeline
from mlcir.passes.patterns import (PatternError, RewriteRule, apply_rules, is_const, is_op,
                                   matches, rewrite, wildcard)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "graph-passes.md"

MODULE = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>, %w: tensor<8x4xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %k = arith.constant dense<2.0> : tensor<4x8xf32>
  %m0 = "graph.multiply"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s0 = "graph.add"(%m0, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = "graph.multiply"(%a, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s1 = "graph.add"(%c, %m1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m2 = "graph.multiply"(%b, %k) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s2 = "graph.add"(%m2, %m2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = "graph.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %s3 = "graph.subtract"(%t, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m4 = "graph.multiply"(%b, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s4 = "graph.add"(%m4, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r4 = "graph.relu"(%m4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s5 = "graph.add"(%s4, %r4) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s0, %s1, %s2, %s3, %s5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
"""


@pytest.fixture
def module(ctx):  # noqa: ARG001 - the context the module is parsed in
    return mlcir.parse(MODULE)


def _args(module):
    return list(module.body.operations[0].arguments)


def _result_defs(module):
    """The op defining each returned value, by name: s0, s1, s2, s3, s5."""
    ret = list(module.body.operations[0].regions[0].blocks[0].operations)[-1]
    return dict(zip(["s0", "s1", "s2", "s3", "s5"], (v.owner for v in ret.operands)))


def test_an_op_dag_matches_and_names_its_values(module):
    a, b, c, _ = _args(module)
    fma = is_op("graph.add")(is_op("graph.multiply")(wildcard("x"), wildcard("y")), wildcard("z"))
    found = fma.match(_result_defs(module)["s0"])
    assert found is not None
    assert found["x"] == a and found["y"] == b and found["z"] == c
    assert [op.name for op in found.ops] == ["graph.add", "graph.multiply"]
    assert fma.names() == ["x", "y", "z"]
    # the wrong op at the root, or a subtract where a multiply is wanted: no match
    assert fma.match(_result_defs(module)["s3"]) is None
    assert is_op("graph.add")(wildcard(), wildcard(), wildcard()).match(
        _result_defs(module)["s0"]) is None  # operand count differs


def test_commutative_ops_match_either_operand_order(module):
    a, _, c, _ = _args(module)
    pattern = is_op("graph.add")(is_op("graph.multiply")(wildcard("x"), wildcard("y")), wildcard("z"))
    found = pattern.match(_result_defs(module)["s1"])  # add(c, multiply(a, a))
    assert found is not None and found["z"] == c and found["x"] == a
    sub = is_op("graph.subtract")(wildcard("c"), is_op("graph.permute_dims")(wildcard("w")))
    assert sub.match(_result_defs(module)["s3"]) is None  # subtract is not commutative


def test_a_shared_pattern_or_name_matches_one_value(module):
    x = wildcard("x")
    square = is_op("graph.multiply")(x, x)
    assert [m["x"] for m in matches(module, square)] == [_args(module)[0]]  # only a * a
    same_name = is_op("graph.multiply")(wildcard("v"), wildcard("v"))
    assert len(matches(module, same_name)) == 1
    # shared op pattern: add(m, m) of one product
    m = is_op("graph.multiply")(wildcard(), is_const("k"))
    doubled = is_op("graph.add")(m, m)
    found = doubled.match(_result_defs(module)["s2"])
    assert found is not None and found["k"].owner.name == "arith.constant"


def test_a_match_never_duplicates_work_unless_asked(module):
    pattern = is_op("graph.add")(is_op("graph.multiply")(wildcard("x"), wildcard("y")), wildcard("z"))
    s4 = _result_defs(module)["s5"].operands[0].owner  # add(m4, a) where m4 is also relu'd
    assert pattern.match(s4) is None
    assert pattern.match(s4, allow_duplication=True) is not None
    # add(m2, m2): the product would be read by the replacement as "z" and kept alive
    assert pattern.match(_result_defs(module)["s2"]) is None
    one_use = is_op("graph.multiply")(wildcard("x"), wildcard("y")).one_use()
    a, b, _, _ = _args(module)
    assert [(m["x"], m["y"]) for m in matches(module, one_use)] == [(a, b), (a, a)]  # m0, m1


def test_attribute_type_and_constant_constraints(module):
    s3 = _result_defs(module)["s3"]
    transpose = is_op("graph.permute_dims", axes=[1, 0])(wildcard("w"))
    assert is_op("graph.subtract")(transpose, wildcard()).match(s3) is not None
    assert is_op("graph.subtract")(is_op("graph.permute_dims", axes=[0, 1])(wildcard()),
                                   wildcard()).match(s3) is None
    by_predicate = is_op("graph.permute_dims").has_attr(axes=lambda axes: axes[0] == 1)
    assert is_op("graph.subtract")(by_predicate, wildcard()).match(s3) is not None
    assert is_op("graph.subtract")(wildcard().has_shape([4, 8]).has_dtype("f32"),
                                   wildcard()).match(s3) is not None
    assert is_op("graph.subtract")(wildcard().has_type("tensor<4x8xf16>"), wildcard()).match(s3) is None
    # constants: the multiply by %k matches is_const, the one by %a does not
    by_const = is_op("graph.multiply")(wildcard(), is_const())
    assert [m.root.operands[0] for m in matches(module, by_const)] == [_args(module)[1]]


def test_alternatives(module):
    either = is_op("graph.subtract", "graph.add")(is_op("graph.permute_dims")(wildcard()), wildcard()) \
        | is_op("graph.relu")(wildcard())
    roots = sorted(m.root.name for m in matches(module, either))
    assert roots == ["graph.relu", "graph.subtract"]
    assert either.root_names() == ["graph.subtract", "graph.add", "graph.relu"]


@pytest.mark.usefixtures("ctx")
def test_rewrite_keeps_the_numbers_and_counts_rewrites(rng):
    module = mlcir.parse(MODULE)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(4, 8)] * 3 + [(8, 4)]]
    before = mlcir.build(module).main(*args)
    fma = is_op("graph.add")(is_op("graph.multiply")(wildcard("a"), wildcard("b")), wildcard("c"))
    count = rewrite(module, fma, lambda a, b, c: graph.ewise_fma(a, b, c))
    text = str(module)
    assert count == 2 and text.count("graph.ewise_fma") == 2  # s0, s1; not m2, m4 (shared)
    assert "graph.multiply\"(%arg1, %arg2)" in text  # m4 stays: relu reads it too
    after = mlcir.build(module).main(*args)
    for x, y in zip(before, after):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


def test_a_declined_match_leaves_no_trace(module):
    before = str(module)

    def decline(x):
        graph.relu(x)  # built, then declined: must not stay in the IR
        return None

    assert rewrite(module, is_op("graph.subtract")(wildcard("x"), wildcard()), decline) == 0
    assert str(module) == before


def test_a_builder_returning_the_wrong_type_is_named(module):
    with pytest.raises(PatternError, match=r"rewrite fold-sub: replacement #0 has type "
                                           r"tensor<8x4xf32>, the matched 'graph.subtract' has "
                                           r"tensor<4x8xf32>"):
        apply_rules(module, [RewriteRule(is_op("graph.subtract")(
            is_op("graph.permute_dims")(wildcard("w")), wildcard()), lambda w: w,
            name="fold-sub")])


def test_a_rewrite_that_never_ends_is_reported(module):
    with pytest.raises(PatternError, match=r"rewrite \(graph.subtract\) did not converge in 10 "
                                           "sweeps: does a rule's result match it again"):
        rewrite(module, is_op("graph.subtract")(wildcard("x"), wildcard("y")),
                lambda x, y: graph.subtract(x, y))


def test_patterns_that_cannot_be_rewritten_are_refused():
    with pytest.raises(PatternError, match="cannot be the root of a rewrite"):
        RewriteRule(wildcard("x"), lambda x: x)
    with pytest.raises(PatternError, match="write the full op name, e.g. 'graph.relu'"):
        is_op("relu")
    with pytest.raises(PatternError, match=r"operand 0 of is_op\(graph.relu\) is str"):
        is_op("graph.relu")("x")


@pytest.mark.usefixtures("ctx")
def test_fuse_ewise_fma_pass_gives_the_unfused_numbers(rng):
    module = mlcir.parse(MODULE)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(4, 8)] * 3 + [(8, 4)]]
    before = mlcir.build(module).main(*args)
    run_pipeline(module, "graph-fuse-ewise-fma")
    assert str(module).count('"graph.ewise_fma"') == 2
    after = mlcir.build(module).main(*args)
    a, b, c, _ = args
    np.testing.assert_allclose(after[0], a * b + c, rtol=1e-6)
    for x, y in zip(before, after):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.usefixtures("ctx")
def test_the_documented_ewise_fma_example_runs():
    """The example in docs/graph-passes.md, executed as written."""
    code = re.search(r"<!-- ewise-fma-example -->\s*```python\n(.*?)```", DOCS.read_text(),
                     re.DOTALL).group(1)
    module = mlcir.parse(MODULE)
    namespace = {"module": module}
    exec(compile(code, str(DOCS), "exec"), namespace)
    assert namespace["count"] == 2
    assert str(module).count('"graph.ewise_fma"') == 2
