// A recorded GPU schedule (sch.as_transform() of tests/test_cuda.py's shared_matmul(128, 128, 64)):
// 16 x 16 output tiles on blockIdx.y/x, k stepped by 16 with the A and B tiles staged in
// shared memory (#gpu.address_space<workgroup>), one output element per thread (threadIdx.y/x).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} attributes {sym_name = "main"} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.annotate %0 "loop.scheduled" : !transform.any_op
    %1 = transform.structured.match attributes {loop.block = "C_init"} in %0 : (!transform.any_op) -> !transform.any_op
    %2 = transform.structured.match attributes {loop.block = "C"} in %0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %2 tile_sizes [16, 16, 0](mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %3 = transform.param.constant "C.i_0+j_0" -> !transform.any_param
    transform.annotate %forall_op "loop.name" = %3 : !transform.any_op, !transform.any_param
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op tile_sizes [0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %4 = transform.param.constant "C.k_0" -> !transform.any_param
    transform.annotate %loops "loop.name" = %4 : !transform.any_op, !transform.any_param
    %5 = transform.get_operand %tiled_linalg_op[0] : (!transform.any_op) -> !transform.any_value
    %6 = transform.structured.promote_tensor to #gpu.address_space<workgroup> %5 : !transform.any_value
    %7 = transform.get_operand %tiled_linalg_op[1] : (!transform.any_op) -> !transform.any_value
    %8 = transform.structured.promote_tensor to #gpu.address_space<workgroup> %7 : !transform.any_value
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %tiled_linalg_op tile_sizes [1, 1, 0](mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %9 = transform.param.constant "C.i_1+j_1" -> !transform.any_param
    transform.annotate %forall_op_1 "loop.name" = %9 : !transform.any_op, !transform.any_param
    transform.apply_dce to %0 : !transform.any_op
    transform.yield 
  }
}

