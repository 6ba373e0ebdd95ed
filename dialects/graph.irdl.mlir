// Generated from the op declarations in dialects/graph.py; do not edit.
irdl.dialect @graph {
  irdl.operation @relu {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @negative {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @exp {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @log {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @sqrt {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @rsqrt {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @tanh {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @sigmoid {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @erf {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @abs {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @add {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @subtract {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @multiply {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @divide {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @power {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @maximum {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @minimum {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @ewise_fma {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    irdl.operands(a: %o0, b: %o1, c: %o2)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @matmul {
    %o0 = irdl.any
    %o1 = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    %r0 = irdl.any
    irdl.results(result: %r0)
  }
  irdl.operation @permute_dims {
    %o0 = irdl.any
    irdl.operands(x: %o0)
    %r0 = irdl.any
    irdl.results(result: %r0)
    %a0 = irdl.base "#builtin.dense_array"
    irdl.attributes {"axes" = %a0}
  }
}
