"""The ``graph`` op table: every op declared once, as one :class:`OpDef` row of :data:`OPS`.

The IRDL text, the Python verifier, the builders (:mod:`.graph_builders`) and constant folding
all read this table; the shape rules and numpy semantics it names live in the modules next to it.
"""

from __future__ import annotations

import numpy as np

from .dtypes import numpy_dtype
from .graph_blocked import _conv2d_nchwc, _layout_transform, _np_conv2d_nchwc, \
    _np_layout_transform, _np_max_pool2d_nchwc, _np_winograd_input, _np_winograd_output, \
    _pool_nchwc, _winograd_input, _winograd_output
from .graph_eval import _divide, _erf, _np_avg_pool2d, _np_clip, _np_conv2d, _np_float, \
    _np_gather_elements, _np_gelu, _np_isinf, _np_layer_norm, _np_log_softmax, \
    _np_matmul_packed, _np_max, _np_max_pool2d, _np_mean, _np_min, _np_pad, _np_pad_window, \
    _np_prod, _np_reshape, _np_scatter_rows, _np_shift, _np_softmax, _np_strided_slice, \
    _np_sum, _np_take
from .graph_shape_ops import _broadcast_to, _gather_elements, _iota, _pad, _reshape, \
    _scatter_rows, _strided_slice, _take
from .graph_shapes import _astype, _boolean_elementwise, _broadcasting, _clip_check, \
    _comparison, _conv2d, _conv2d_check, _float_elementwise, _float_predicate, _gelu_check, \
    _integer_elementwise, _layer_norm, _leaky_relu_check, _matmul, _matmul_packed, \
    _numeric_elementwise, _pad_window, _permute_dims, _pool, _pool_check, _reduction, \
    _same_shape, _softmax, _unary, _where
from .opdef import AttrDef, OpDef, irdl_dialect

DIALECT = "graph"

# Attribute names mlcir sets on upstream ops of a graph module.
LIBRARY_ATTR = "graph.library"      # on a func.func declaration: the registered library name
NAME_ATTR = "graph.name"            # on a function argument/result: its user-facing name
DIMS_ATTR = "graph.dims"            # on a function argument: each dim's symbol ("" if none)
SPECIALIZES_ATTR = "graph.specializes"  # on a public func.func: the function it specialises
DTYPE_ATTR = "graph.dtype"          # ... and its numpy dtype where the element type does not
                                    # say it (an unsigned integer stored as signless)
PRIMITIVE_ATTR = "graph.primitive"  # on a private func.func: a fused group, one future kernel
EXTERN_ATTR = "graph.extern"        # on a func.func declaration: the external C function it calls
                                    # ({function, backend, ints, int_type, returns}; docs/uma.md)
EXTERN_CODE_ATTR = "graph.extern_code"  # on the module: per backend, the C code defining them

_REDUCTION_ATTRS = (AttrDef("axes", "ints", "the reduced axes (sorted, unique, >= 0)"),
                    AttrDef("keepdims", "int", "1: reduced axes stay as size 1"))
# A sliding window's attributes (convolutions and pooling).
_WINDOW_ATTRS = (AttrDef("strides", "ints", "[sh, sw]"),
                 AttrDef("padding", "ints", "[top, left, bottom, right]"),
                 AttrDef("dilation", "ints", "[dh, dw]"))
_POOL_ATTRS = ((AttrDef("kernel", "ints", "[kh, kw]"),) + _WINDOW_ATTRS
               + (AttrDef("ceil_mode", "int", "1: output sizes rounded up (ONNX/PyTorch rule)"),))

#: Every graph op, by name: one :class:`OpDef` row each (order: the IRDL file's).
# The padding of a window op made explicit (pad_window, winograd_input).
_SPATIAL_PADDING = AttrDef("padding", "ints", "[top, left, bottom, right] (dims 2 and 3)")

OPS: dict[str, OpDef] = {op.name: op for op in [
    OpDef(DIALECT, "relu", ("x",), _unary, summary="Elementwise max(x, 0).", pattern="elementwise",
          evaluate=lambda x: np.maximum(x, x.dtype.type(0))),
    OpDef(DIALECT, "negative", ("x",), _unary, summary="Elementwise -x.", pattern="elementwise",
          evaluate=np.negative),
    OpDef(DIALECT, "exp", ("x",), _unary, summary="Elementwise e^x.", pattern="elementwise",
          evaluate=np.exp),
    OpDef(DIALECT, "log", ("x",), _unary, summary="Elementwise natural logarithm.",
          pattern="elementwise", evaluate=np.log),
    OpDef(DIALECT, "sqrt", ("x",), _unary, summary="Elementwise square root.",
          pattern="elementwise", evaluate=np.sqrt),
    OpDef(DIALECT, "rsqrt", ("x",), _unary, summary="Elementwise 1 / sqrt(x).",
          pattern="elementwise", evaluate=lambda x: (1 / np.sqrt(x)).astype(x.dtype)),
    OpDef(DIALECT, "tanh", ("x",), _unary, summary="Elementwise hyperbolic tangent.",
          pattern="elementwise", evaluate=np.tanh),
    OpDef(DIALECT, "sigmoid", ("x",), _unary, summary="Elementwise 1 / (1 + e^-x).",
          pattern="elementwise", evaluate=lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype)),
    OpDef(DIALECT, "erf", ("x",), _unary, summary="Elementwise error function.",
          pattern="elementwise", evaluate=_erf),
    OpDef(DIALECT, "abs", ("x",), _unary, summary="Elementwise absolute value.",
          pattern="elementwise", evaluate=np.abs),
    OpDef(DIALECT, "add", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a + b, numpy broadcasting.", pattern="broadcast", evaluate=np.add),
    OpDef(DIALECT, "subtract", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a - b, numpy broadcasting.", pattern="broadcast",
          evaluate=np.subtract),
    OpDef(DIALECT, "multiply", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a * b, numpy broadcasting.", pattern="broadcast",
          evaluate=np.multiply),
    OpDef(DIALECT, "divide", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a / b, numpy broadcasting.", pattern="broadcast", evaluate=_divide),
    OpDef(DIALECT, "power", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise a ** b, numpy broadcasting.", pattern="broadcast",
          evaluate=np.power),
    OpDef(DIALECT, "maximum", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise max(a, b), numpy broadcasting.", pattern="broadcast",
          evaluate=np.maximum),
    OpDef(DIALECT, "minimum", ("lhs", "rhs"), _broadcasting,
          summary="Elementwise min(a, b), numpy broadcasting.", pattern="broadcast",
          evaluate=np.minimum),
    OpDef(DIALECT, "ewise_fma", ("a", "b", "c"), _same_shape,
          summary="a * b + c on tensors of one shape (Relax's ewise_fma).", pattern="elementwise",
          evaluate=lambda a, b, c: a * b + c),
    OpDef(DIALECT, "matmul", ("lhs", "rhs"), _matmul,
          summary="numpy.matmul: batched, broadcast leading dims, 1-D operands promoted.",
          pattern="anchor", evaluate=np.matmul),
    OpDef(DIALECT, "matmul_packed", ("lhs", "packed"), _matmul_packed,
          summary="lhs [.., M, K] times a constant right operand packed in panels [N/n, K, n] "
                  "(graph-pack-weights); the result is blocked [.., M, N/n, n].",
          pattern="anchor", evaluate=_np_matmul_packed),
    OpDef(DIALECT, "permute_dims", ("x",), _permute_dims,
          attrs=(AttrDef("axes", "ints", "result dim i is input dim axes[i]"),),
          summary="Transpose: the dimensions of x reordered by `axes`.", pattern="injective",
          evaluate=lambda x, axes: np.transpose(x, axes)),
    OpDef(DIALECT, "sum", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the sum over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_sum),
    OpDef(DIALECT, "mean", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the mean (integers: the sum divided with truncation) over `axes` "
                  "(numpy semantics).",
          pattern="reduction", evaluate=_np_mean),
    OpDef(DIALECT, "max", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the maximum over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_max),
    OpDef(DIALECT, "min", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the minimum over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_min),
    OpDef(DIALECT, "prod", ("x",), _reduction, attrs=_REDUCTION_ATTRS,
          summary="Reduction: the product over `axes` (numpy semantics).", pattern="reduction",
          evaluate=_np_prod),
    OpDef(DIALECT, "leaky_relu", ("x",), _unary,
          attrs=(AttrDef("alpha", "float", "slope for x < 0"),), check=_leaky_relu_check,
          summary="x if x >= 0 else alpha * x.", pattern="elementwise",
          evaluate=lambda x, alpha: np.where(x >= 0, x, x * x.dtype.type(alpha))),
    OpDef(DIALECT, "clip", ("x",), _unary,
          attrs=(AttrDef("min", "float", "lower bound (-inf: none)"),
                 AttrDef("max", "float", "upper bound (+inf: none)")), check=_clip_check,
          summary="min(max(x, min), max).", pattern="elementwise", evaluate=_np_clip),
    OpDef(DIALECT, "gelu", ("x",), _unary,
          attrs=(AttrDef("approximate", "str", '"none" (erf) or "tanh"'),), check=_gelu_check,
          summary="0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation.", pattern="elementwise",
          evaluate=_np_gelu),
    OpDef(DIALECT, "astype", ("x",), _astype,
          attrs=(AttrDef("dtype", "type", "the result element type (f32, i64, ...)"),),
          summary="Elementwise conversion (float to int truncates toward zero; to i1: != 0).",
          pattern="elementwise", evaluate=lambda x, dtype: x.astype(numpy_dtype(dtype))),
    OpDef(DIALECT, "softmax", ("x",), _softmax,
          attrs=(AttrDef("axis", "int", "the normalised axis (>= 0)"),),
          summary="exp(x - max) / sum(exp(x - max)) along `axis`.", pattern="reduction",
          evaluate=_np_softmax),
    OpDef(DIALECT, "log_softmax", ("x",), _softmax,
          attrs=(AttrDef("axis", "int", "the normalised axis (>= 0)"),),
          summary="x - max - log(sum(exp(x - max))) along `axis`: log(softmax(x)), stable.",
          pattern="reduction", evaluate=_np_log_softmax),
    OpDef(DIALECT, "layer_norm", ("x", "gamma", "beta"), _layer_norm,
          attrs=(AttrDef("axes", "ints", "the trailing axes normalised"),
                 AttrDef("epsilon", "float", "added to the variance")),
          summary="(x - mean) / sqrt(var + epsilon) * gamma + beta over the trailing `axes`; "
                  "gamma and beta have the shape of those axes.",
          pattern="reduction", evaluate=_np_layer_norm),
    OpDef(DIALECT, "conv2d", ("x", "w"), _conv2d,
          attrs=_WINDOW_ATTRS + (AttrDef("groups", "int", "channel groups (C for depthwise)"),), check=_conv2d_check,
          summary="2-D convolution, x NCHW, w [O, C/groups, KH, KW], no bias.", pattern="anchor",
          evaluate=_np_conv2d),
    OpDef(DIALECT, "max_pool2d", ("x",), _pool, attrs=_POOL_ATTRS, check=_pool_check,
          summary="2-D max pooling of NCHW x; padding never wins.", pattern="anchor",
          evaluate=_np_max_pool2d),
    OpDef(DIALECT, "avg_pool2d", ("x",), _pool,
          attrs=_POOL_ATTRS + (AttrDef("count_include_pad", "int",
                                       "1: the divisor counts explicit padding"),),
          check=_pool_check,
          summary="2-D average pooling of NCHW x.", pattern="anchor", evaluate=_np_avg_pool2d),
    OpDef(DIALECT, "layout_transform", ("x",), _layout_transform,
          attrs=(AttrDef("src_layout", "str", '"NCHW" or "NCHW<c>c"'),
                 AttrDef("dst_layout", "str", '"NCHW<c>c" or "NCHW"')),
          summary="Between NCHW and the blocked NCHW<c>c ([N, C/c, H, W, c]; TVM's "
                  "layout_transform), inserted by graph-layout-nchwc where a blocked chain "
                  "begins or ends.", pattern="injective", evaluate=_np_layout_transform),
    OpDef(DIALECT, "conv2d_nchwc", ("x", "w"), _conv2d_nchwc,
          attrs=_WINDOW_ATTRS + (AttrDef("groups", "int", "1, or the channels (depthwise)"),), check=_conv2d_check,
          summary="conv2d in NCHW<c>c: x [N, C/ci, H, W, ci], w packed [O/co, C/ci, KH, KW, ci, "
                  "co] (depthwise: [C/c, 1, KH, KW, 1, c]); the result is [N, O/co, OH, OW, co].",
          pattern="anchor", evaluate=_np_conv2d_nchwc),
    OpDef(DIALECT, "pad_window", ("x",), _pad_window,
          attrs=(_SPATIAL_PADDING,
                 AttrDef("value", "float", "the fill (-inf: an integer type's smallest)")),
          summary="x (NCHW or NCHW<c>c) with H and W padded by `value`: a window's padding "
                  "made an op of its own by graph-pad-windows, so that the producer of x "
                  "writes straight into the padded tensor.",
          pattern="padding", evaluate=_np_pad_window),
    OpDef(DIALECT, "winograd_input", ("x",), _winograd_input,
          attrs=(_SPATIAL_PADDING,),
          summary="The 6x6 tiles of x (NCHW<c>c, padded by zeros), 4 apart, each as B^T d B "
                  "(F(4x4, 3x3)): [36, N tH tW, C], the left operands of a 3x3 convolution's "
                  "36 matmuls (graph-winograd; storage order in dialects/winograd.py).",
          pattern="opaque", evaluate=_np_winograd_input),
    OpDef(DIALECT, "winograd_output", ("m",), _winograd_output,
          attrs=(AttrDef("tiles", "ints", "[tH, tW]: output tiles along H and W"),
                 AttrDef("block", "int", "the channel block c of the NCHW<c>c result")),
          summary="The 36 matmul products m [36, N tH tW, K] of a Winograd F(4x4, 3x3) "
                  "convolution as its NCHW<c>c output [N, K/c, 4 tH, 4 tW, c] (A^T m A per "
                  "tile; graph-winograd).",
          pattern="opaque", evaluate=_np_winograd_output),
    OpDef(DIALECT, "max_pool2d_nchwc", ("x",), _pool_nchwc, attrs=_POOL_ATTRS, check=_pool_check,
          summary="max_pool2d of x in NCHW<c>c ([N, C/c, H, W, c]), pooled along the channel "
                  "block.", pattern="anchor", evaluate=_np_max_pool2d_nchwc),
    OpDef(DIALECT, "reshape", ("x",), _reshape,
          attrs=(AttrDef("shape", "ints", "the full result shape; 0: x's dim at the same "
                                          "position; -2 - j: x's dim j; one -1: the rest of "
                                          "the elements"),),
          summary="Row-major reshape (a view).", pattern="injective", evaluate=_np_reshape),
    OpDef(DIALECT, "iota", ("x",), _iota,
          attrs=(AttrDef("axis", "int", "the axis of x whose size is the length"),),
          summary="The i64 vector 0, 1, ..., n - 1 with n the size of x's `axis` (x's values "
                  "are not read): a range whose length is known only at run time.",
          pattern="injective",
          evaluate=lambda x, axis: np.arange(x.shape[axis], dtype=np.int64)),
    OpDef(DIALECT, "broadcast_to", ("x",), _broadcast_to,
          attrs=(AttrDef("shape", "ints", "the result shape"),), summary="numpy.broadcast_to.",
          pattern="injective",
          evaluate=lambda x, shape: np.ascontiguousarray(np.broadcast_to(x, shape))),
    OpDef(DIALECT, "strided_slice", ("x",), _strided_slice,
          attrs=(AttrDef("begin", "ints", "per axis, >= 0"),
                 AttrDef("end", "ints", "per axis, exclusive (-1 with a negative stride: "
                                        "through index 0)"),
                 AttrDef("strides", "ints", "per axis, non-zero")),
          summary="x[begin:end:stride] per axis (numpy basic slicing, normalised bounds).",
          pattern="injective", evaluate=_np_strided_slice),
    OpDef(DIALECT, "take", ("x", "indices"), _take,
          attrs=(AttrDef("axis", "int", "the axis indexed"),),
          summary="numpy.take along `axis`; negative indices count from the end.",
          pattern="injective", evaluate=_np_take),
    OpDef(DIALECT, "gather_elements", ("x", "indices"), _gather_elements,
          attrs=(AttrDef("axis", "int", "the axis indexed"),),
          summary="numpy.take_along_axis (ONNX GatherElements): the result has the indices' "
                  "shape; negative indices count from the end.",
          pattern="injective", evaluate=_np_gather_elements),
    OpDef(DIALECT, "pad", ("x", "pads", "value"), _pad,
          attrs=(AttrDef("mode", "str", '"constant", "reflect", "edge" or "wrap"'),),
          summary="x padded by `pads` (i64 [2 * rank]: the begins, then the ends; negative "
                  "crops), known only at run time, so every result dim is dynamic; `value` "
                  "(0-d) fills mode constant.",
          pattern="opaque", evaluate=_np_pad),
    OpDef(DIALECT, "scatter_rows", ("data", "rows", "updates"), _scatter_rows,
          attrs=(AttrDef("reduction", "str", '"none", "add", "mul", "max" or "min"'),),
          summary="data [R, K] with row rows[m] replaced by updates[m] (m in order: a later "
                  "update of a row wins), or combined with it by `reduction`; rows in [0, R).",
          pattern="opaque", evaluate=_np_scatter_rows),
    OpDef(DIALECT, "sin", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise sine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.sin)),
    OpDef(DIALECT, "cos", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise cosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.cos)),
    OpDef(DIALECT, "tan", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise tangent of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.tan)),
    OpDef(DIALECT, "asin", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise arcsine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arcsin)),
    OpDef(DIALECT, "acos", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise arccosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arccos)),
    OpDef(DIALECT, "atan", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise arctangent of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arctan)),
    OpDef(DIALECT, "sinh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise hyperbolic sine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.sinh)),
    OpDef(DIALECT, "cosh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise hyperbolic cosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.cosh)),
    OpDef(DIALECT, "asinh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise inverse hyperbolic sine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arcsinh)),
    OpDef(DIALECT, "acosh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise inverse hyperbolic cosine of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arccosh)),
    OpDef(DIALECT, "atanh", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise inverse hyperbolic tangent of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.arctanh)),
    OpDef(DIALECT, "floor", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise floor of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.floor)),
    OpDef(DIALECT, "ceil", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise ceiling of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.ceil)),
    OpDef(DIALECT, "round", ("x",), _unary, check=_float_elementwise,
          summary="Elementwise rounding to the nearest integer, halves to even (ONNX Round) of a float tensor.", pattern="elementwise",
          evaluate=_np_float(np.round)),
    OpDef(DIALECT, "sign", ("x",), _unary, check=_numeric_elementwise,
          summary="Elementwise sign: -1, 0 or 1 (NaN stays NaN).", pattern="elementwise",
          evaluate=np.sign),
    OpDef(DIALECT, "bitwise_not", ("x",), _unary, check=_integer_elementwise,
          summary="Elementwise bitwise complement of an integer tensor.",
          pattern="elementwise", evaluate=np.invert),
    OpDef(DIALECT, "bitwise_and", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a & b of integer tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.bitwise_and),
    OpDef(DIALECT, "bitwise_or", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a | b of integer tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.bitwise_or),
    OpDef(DIALECT, "bitwise_xor", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a ^ b of integer tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.bitwise_xor),
    OpDef(DIALECT, "mod", ("lhs", "rhs"), _broadcasting, check=_numeric_elementwise,
               summary="Remainder with the sign of the divisor (numpy.mod, Python's %; ONNX "
                       "Mod with fmod=0), numpy broadcasting.",
               pattern="broadcast", evaluate=np.mod),
    OpDef(DIALECT, "fmod", ("lhs", "rhs"), _broadcasting, check=_numeric_elementwise,
               summary="Remainder with the sign of the dividend (C fmod, numpy.fmod; ONNX Mod "
                       "with fmod=1), numpy broadcasting.",
               pattern="broadcast", evaluate=np.fmod),
    OpDef(DIALECT, "thresholded_relu", ("x",), _unary,
               attrs=(AttrDef("alpha", "float", "the threshold"),), check=_float_elementwise,
               summary="x if x > alpha else 0.", pattern="elementwise",
               evaluate=lambda x, alpha: np.where(x > alpha, x, x.dtype.type(0))),
    OpDef(DIALECT, "shrink", ("x",), _unary,
               attrs=(AttrDef("lambd", "float", "half the width of the band mapped to 0"),
                      AttrDef("bias", "float", "moved towards 0 outside the band")),
               check=_float_elementwise,
               summary="x + bias if x < -lambd, x - bias if x > lambd, else 0 (ONNX Shrink).",
               pattern="elementwise",
               evaluate=lambda x, lambd, bias: np.where(
                   x < -lambd, x + x.dtype.type(bias),
                   np.where(x > lambd, x - x.dtype.type(bias), x.dtype.type(0))).astype(x.dtype)),
    OpDef(DIALECT, "equal", ("lhs", "rhs"), _comparison,
          summary="Elementwise a == b (a boolean tensor), numpy broadcasting.",
          pattern="broadcast", evaluate=np.equal),
    OpDef(DIALECT, "less", ("lhs", "rhs"), _comparison,
          summary="Elementwise a < b (a boolean tensor; false with a NaN), numpy broadcasting.",
          pattern="broadcast", evaluate=np.less),
    OpDef(DIALECT, "less_equal", ("lhs", "rhs"), _comparison,
          summary="Elementwise a <= b (a boolean tensor; false with a NaN), numpy broadcasting.",
          pattern="broadcast", evaluate=np.less_equal),
    OpDef(DIALECT, "greater", ("lhs", "rhs"), _comparison,
          summary="Elementwise a > b (a boolean tensor; false with a NaN), numpy broadcasting.",
          pattern="broadcast", evaluate=np.greater),
    OpDef(DIALECT, "greater_equal", ("lhs", "rhs"), _comparison,
          summary="Elementwise a >= b (a boolean tensor; false with a NaN), numpy "
                  "broadcasting.",
          pattern="broadcast", evaluate=np.greater_equal),
    OpDef(DIALECT, "logical_and", ("lhs", "rhs"), _broadcasting, check=_boolean_elementwise,
          summary="Elementwise a and b of boolean tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.logical_and),
    OpDef(DIALECT, "logical_or", ("lhs", "rhs"), _broadcasting, check=_boolean_elementwise,
          summary="Elementwise a or b of boolean tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.logical_or),
    OpDef(DIALECT, "logical_xor", ("lhs", "rhs"), _broadcasting, check=_boolean_elementwise,
          summary="Elementwise a xor b of boolean tensors, numpy broadcasting.",
          pattern="broadcast", evaluate=np.logical_xor),
    OpDef(DIALECT, "logical_not", ("x",), _unary, check=_boolean_elementwise,
          summary="Elementwise not x of a boolean tensor.", pattern="elementwise",
          evaluate=np.logical_not),
    OpDef(DIALECT, "where", ("condition", "x", "y"), _where,
          summary="Elementwise x where condition else y (numpy.where), numpy broadcasting of "
                  "all three.",
          pattern="broadcast", evaluate=np.where),
    OpDef(DIALECT, "isnan", ("x",), _float_predicate,
          summary="Elementwise: is x NaN (a boolean tensor).", pattern="elementwise",
          evaluate=np.isnan),
    OpDef(DIALECT, "isinf", ("x",), _float_predicate,
          attrs=(AttrDef("detect_positive", "int", "1: +inf counts"),
                 AttrDef("detect_negative", "int", "1: -inf counts")),
          summary="Elementwise: is x an infinity of a detected sign (a boolean tensor).",
          pattern="elementwise", evaluate=_np_isinf),
    OpDef(DIALECT, "shift_left", ("lhs", "rhs"), _broadcasting, check=_integer_elementwise,
          summary="Elementwise a << b of integer tensors (0 when b >= the bit width; ONNX "
                  "BitShift LEFT), numpy broadcasting.",
          pattern="broadcast", evaluate=_np_shift(np.left_shift)),
    OpDef(DIALECT, "shift_right_logical", ("lhs", "rhs"), _broadcasting,
          check=_integer_elementwise,
          summary="Elementwise logical (unsigned) a >> b of integer tensors (0 when b >= the "
                  "bit width; ONNX BitShift RIGHT), numpy broadcasting.",
          pattern="broadcast", evaluate=_np_shift(np.right_shift)),
]}


def irdl_text() -> str:
    """The ``irdl.dialect @graph`` text of every op in :data:`OPS`."""
    return irdl_dialect(DIALECT, list(OPS.values()))
