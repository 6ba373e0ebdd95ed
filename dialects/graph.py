"""The ``graph`` dialect: pure tensor operators of a computational graph (Relax's analogue).

Each op is one :class:`~mlcir.dialects.opdef.OpDef` row of the table :data:`OPS`; its IRDL text,
verifier and builder (``graph.matmul(a, b)``, made from the row) all come from it. This module
is the dialect's one public face; the parts live next to it, by concern: shape rules
(``graph_shapes``, ``graph_shape_ops``), numpy semantics (``graph_eval``), the blocked NCHW<c>c
layout (``graph_blocked``), the table (``graph_ops``) and the builders (``graph_builders``).
Adding an op is one row in :data:`OPS` and its lowering in ``passes/lowerings``.

What is not an op here is upstream: graph functions are ``func.func``, constants are
``arith.constant``, and the destination-passing call to a kernel or a library function is
``func.call`` (see :func:`call_dps` and docs/decisions.md).
"""

from __future__ import annotations

from .graph_blocked import from_blocked, pack_filter, parse_blocked_layout, to_blocked, \
    unpack_filter
from .graph_builders import BUILDERS, build, builder_signature, call_dps, call_extern, \
    call_library, declare_library_function, element_count, make_builder
from .graph_eval import _np_conv2d, pool_divisors
from .graph_ops import DIALECT, DIMS_ATTR, DTYPE_ATTR, EXTERN_ATTR, EXTERN_CODE_ATTR, \
    LIBRARY_ATTR, NAME_ATTR, OPS, PRIMITIVE_ATTR, SPECIALIZES_ATTR, irdl_text
from .graph_shape_ops import PAD_MODES, SCATTER_REDUCTIONS, reshape_groups, reshape_result, \
    reshape_source_axis, slice_length
from .graph_shapes import broadcast_shapes, is_float_type, is_signless_int_type, \
    window_output_size
from .opdef import AttrDef, OpDef, ShapeError, TensorSpec

__all__ = [
    "DIALECT", "DIMS_ATTR", "DTYPE_ATTR", "EXTERN_ATTR", "EXTERN_CODE_ATTR", "LIBRARY_ATTR", "NAME_ATTR", "OPS", "PAD_MODES",
    "PRIMITIVE_ATTR", "SCATTER_REDUCTIONS", "SPECIALIZES_ATTR", "AttrDef", "OpDef", "ShapeError",
    "TensorSpec", "broadcast_shapes", "build", "builder_signature", "call_dps", "call_extern", "call_library",
    "declare_library_function", "element_count", "from_blocked", "irdl_text",
    "is_float_type", "is_signless_int_type", "make_builder", "pack_filter",
    "parse_blocked_layout", "pool_divisors", "reshape_groups", "reshape_result",
    "reshape_source_axis", "slice_length", "to_blocked", "unpack_filter", "window_output_size",
    # Private, but tests compare against it by this name.
    "_np_conv2d",
]

# One builder per op, ``graph.relu`` ... ``graph.sum`` (the op names, builtins' included).
globals().update(BUILDERS)
__all__ += list(BUILDERS)
