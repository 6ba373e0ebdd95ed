// Recorded by mlcir.Schedule(...).as_transform() for the course schedule (see transform-script.mlir).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} attributes {sym_name = "main"} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.annotate %0 "loop.scheduled" : !transform.any_op
    %1 = transform.structured.match attributes {loop.block = "C"} in %0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %1 tile_sizes [1, 0, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %forall_op "loop.serial" : !transform.any_op
    %2 = transform.param.constant "C.i" -> !transform.any_param
    transform.annotate %forall_op "loop.name" = %2 : !transform.any_op, !transform.any_param
    %3 = transform.tune.knob<"main.C.j_0"> = 16 : i64 from options = [1, 2, 4, 8, 16] -> !transform.param<i64>
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %tiled_op tile_sizes [0, %3, 0] : (!transform.any_op, !transform.param<i64>) -> (!transform.any_op, !transform.any_op)
    transform.annotate %forall_op_1 "loop.serial" : !transform.any_op
    %4 = transform.param.constant "C.j_0" -> !transform.any_param
    transform.annotate %forall_op_1 "loop.name" = %4 : !transform.any_op, !transform.any_param
    %5 = transform.structured.match attributes {loop.block = "C_init"} in %0 : (!transform.any_op) -> !transform.any_op
    %fused_op, %new_containing_op = transform.structured.fuse_into_containing_op %5 into %forall_op : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %fused_op_2, %new_containing_op_3 = transform.structured.fuse_into_containing_op %fused_op into %forall_op_1 : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op_0 tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %6 = transform.param.constant "C.k" -> !transform.any_param
    transform.annotate %loops "loop.name" = %6 : !transform.any_op, !transform.any_param
    transform.structured.vectorize %tiled_linalg_op : !transform.any_op
    transform.apply_dce to %0 : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
    transform.yield 
  }
}
