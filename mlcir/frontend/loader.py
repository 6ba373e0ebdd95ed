"""Reading an ONNX model and checking that it is one mlcir can import.

Everything that can be wrong with the *file* is found here, before any node is looked at: a
missing or unreadable file, bytes that are not an ONNX model (or a truncated one), a model that
fails ``onnx.checker``, an ``ai.onnx`` opset outside the supported range, graph inputs of a type
mlcir has no tensors for, and a ``shape_dict`` that does not fit the inputs. Each becomes one
:class:`~mlcir.errors.FrontendError` that says what and where.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np
import onnx
import onnx.inliner
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper, shape_inference

from mlcir.errors import FrontendError

from .opset_upgrade import OLDEST_OPSET, upgrade

ModelSource = Union[str, os.PathLike, bytes, onnx.ModelProto]

#: The oldest ``ai.onnx`` opset the converters implement (axes moved to inputs at 13).
MIN_OPSET = 13
#: The newest: the one the installed onnx package knows.
MAX_OPSET = onnx.defs.onnx_opset_version()

ONNX_DOMAINS = ("", "ai.onnx")

#: ONNX element types a graph input may have (the ones mlcir has tensors and numpy arrays for).
INPUT_TYPES = {
    TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.FLOAT16: "float16",
    TensorProto.INT8: "int8", TensorProto.INT16: "int16", TensorProto.INT32: "int32",
    TensorProto.INT64: "int64", TensorProto.BOOL: "bool",
    # stored as the signless integers of their width; only ops that mean the same on the bits
    # take them (Converter.unsigned_inputs)
    TensorProto.UINT8: "uint8", TensorProto.UINT16: "uint16", TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
}

#: A dimension as the frontend sees it: a size, or None when unknown or symbolic.
Shape = tuple[Union[int, None], ...]


@dataclass
class LoadedModel:
    """A checked model, with what the importer needs to know about it."""

    model: onnx.ModelProto        # shape_dict applied, shapes inferred
    source: str                   # the file name, or "<bytes>"/"<ModelProto>", for messages
    opset: int                    # the ai.onnx opset
    initializers: dict[str, np.ndarray]
    inputs: list[onnx.ValueInfoProto]   # graph inputs that are not initializers, in order
    # Every value whose type ONNX shape inference knows: name -> (shape, numpy dtype).
    value_types: dict[str, tuple[Shape, np.dtype]]


def read_model(source: ModelSource) -> tuple[onnx.ModelProto, str]:
    """The ModelProto of a path, serialized bytes or a ModelProto (external data loaded)."""
    if isinstance(source, onnx.ModelProto):
        return source, "<ModelProto>"
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse(bytes(source), "<bytes>"), "<bytes>"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FrontendError(f"{path}: no such file")
        if path.is_dir():
            raise FrontendError(f"{path}: is a directory, not an ONNX model file")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise FrontendError(f"{path}: cannot read the file: {e.strerror or e}") from None
        model = _parse(data, str(path))
        try:
            onnx.external_data_helper.load_external_data_for_model(model, str(path.parent))
        except (OSError, ValueError, onnx.checker.ValidationError) as e:
            raise FrontendError(f"{path}: cannot load the model's external data: {e}") from None
        return model, str(path)
    raise TypeError(f"from_onnx takes a path, bytes or an onnx.ModelProto, "
                    f"got {type(source).__name__}")


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise FrontendError(f"{where}: not an ONNX model, or a truncated one "
                            f"(protobuf: {e})") from None
    # Protobuf happily parses many non-ONNX byte strings into a nearly empty message.
    if not model.ir_version or not model.HasField("graph") or not model.opset_import:
        raise FrontendError(f"{where}: not an ONNX model (no IR version, graph or opset "
                            f"import in the {len(data)} bytes read)")
    return model


def ai_onnx_opset(model: onnx.ModelProto, where: str) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ONNX_DOMAINS]
    if not versions:
        raise FrontendError(f"{where}: the model imports no ai.onnx opset")
    opset = max(versions)
    if not OLDEST_OPSET <= opset <= MAX_OPSET:
        advice = (f"convert it with onnx.version_converter.convert_version(model, {MIN_OPSET})"
                  if opset < OLDEST_OPSET else f"the installed onnx {onnx.__version__} knows "
                  f"opsets up to {MAX_OPSET}")
        raise FrontendError(f"{where}: ai.onnx opset {opset} is not supported (mlcir imports "
                            f"opsets {OLDEST_OPSET} to {MAX_OPSET}, those before {MIN_OPSET} "
                            f"converted; {advice})")
    return opset


def load(source: ModelSource,
         shape_dict: Mapping[str, Sequence[int | None]] | None = None) -> LoadedModel:
    """Read, check, fix symbolic dims from ``shape_dict`` and infer shapes."""
    model, where = read_model(source)
    opset = ai_onnx_opset(model, where)
    model = _ir3_initializer_inputs(model)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FrontendError(f"{where}: invalid ONNX model: {first}") from None
    if opset < MIN_OPSET:
        try:
            model = upgrade(model, opset, MIN_OPSET, where)
        except ValueError as e:
            raise FrontendError(f"{where}: cannot convert the ai.onnx opset {opset} model to "
                                f"opset {MIN_OPSET}: {e}") from None
        opset = MIN_OPSET
    if model.functions:  # model-local functions (exporters' modules): inline their bodies
        model = onnx.inliner.inline_local_functions(model)
    else:
        model = _copy(model)
    initializers = {}
    for t in model.graph.initializer:
        try:
            initializers[t.name] = numpy_helper.to_array(t)
        except Exception as e:  # noqa: BLE001 - odd element types (strings, float8): onnx's words
            raise FrontendError(f"{where}: cannot read initializer '{t.name}': {e}") from None
    inputs = [vi for vi in model.graph.input if vi.name not in initializers]
    _check_input_types(inputs, where)
    if shape_dict:
        _apply_shape_dict(inputs, shape_dict, where)
    try:
        model = shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                             data_prop=True)
    except Exception as e:  # noqa: BLE001 - advisory: the converters check what they rely on
        raise FrontendError(f"{where}: ONNX shape inference failed: "
                            f"{str(e).strip().splitlines()[0]}") from None
    return LoadedModel(model, where, opset, initializers, inputs, _value_types(model))


def _ir3_initializer_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """IR version 3 lists every initializer as a graph input too (the zoo's opset 7 files);
    one that is missing there is added, as onnxruntime tolerates. Such inputs are constants
    (their initializers), not arguments of ``main``."""
    if model.ir_version >= 4:
        return model
    listed = {vi.name for vi in model.graph.input}
    missing = [t for t in model.graph.initializer if t.name not in listed]
    if not missing:
        return model
    model = _copy(model)
    model.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                             for t in missing)
    return model


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def _check_input_types(inputs: list[onnx.ValueInfoProto], where: str) -> None:
    bad = []
    for vi in inputs:
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            bad.append(f"'{vi.name}' is a {kind or 'value of unknown type'}")
            continue
        elem = vi.type.tensor_type.elem_type
        if elem not in INPUT_TYPES:
            bad.append(f"'{vi.name}' has element type {TensorProto.DataType.Name(elem)}")
        elif not vi.type.tensor_type.HasField("shape"):
            bad.append(f"'{vi.name}' has no shape (not even a rank)")
        else:
            negative = [(axis, d.dim_value) for axis, d in
                        enumerate(vi.type.tensor_type.shape.dim)
                        if d.HasField("dim_value") and d.dim_value < 0]
            bad.extend(f"'{vi.name}' has size {size} in dimension {axis} (sizes are >= 0; a "
                       "symbolic dim is a dim_param)" for axis, size in negative)
    if bad:
        raise FrontendError(f"{where}: unsupported graph input{'s' if len(bad) > 1 else ''}: "
                            f"{'; '.join(bad)} (supported: tensors of "
                            f"{', '.join(sorted(set(INPUT_TYPES.values())))} with a known rank)")


def _apply_shape_dict(inputs: list[onnx.ValueInfoProto],
                      shape_dict: Mapping[str, Sequence[int | None]], where: str) -> None:
    """Fix the dims of the named inputs (TVM's ``shape=``): a symbolic dim becomes the size
    given; a fixed dim must agree; ``None`` leaves a dim as it is."""
    by_name = {vi.name: vi for vi in inputs}
    unknown = sorted(set(shape_dict) - set(by_name))
    if unknown:
        raise FrontendError(f"{where}: shape_dict names {', '.join(map(repr, unknown))}, which "
                            f"{'is' if len(unknown) == 1 else 'are'} not a graph input (inputs: "
                            f"{', '.join(by_name) or 'none'})")
    for name, shape in shape_dict.items():
        dims = by_name[name].type.tensor_type.shape.dim
        shape = list(shape)
        if len(shape) != len(dims):
            raise FrontendError(f"{where}: shape_dict gives input '{name}' the shape {shape}, "
                                f"but it has rank {len(dims)}")
        for axis, (dim, size) in enumerate(zip(dims, shape)):
            if size is None:
                continue
            if not isinstance(size, (int, np.integer)) or size < 0:
                raise FrontendError(f"{where}: shape_dict['{name}'][{axis}] = {size!r} is not "
                                    "a size")
            if dim.HasField("dim_value") and dim.dim_value != size:
                raise FrontendError(f"{where}: shape_dict gives input '{name}' size {size} in "
                                    f"dimension {axis}, but the model fixes it to "
                                    f"{dim.dim_value}")
            dim.Clear()
            dim.dim_value = int(size)


def tensor_type(type_proto: onnx.TypeProto) -> tuple[Shape, np.dtype] | None:
    """(shape, dtype) of a tensor type whose rank is known, else None."""
    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
    except (KeyError, TypeError, ValueError):
        return None
    shape = tuple(int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim)
    return shape, dtype


def _value_types(model: onnx.ModelProto) -> dict[str, tuple[Shape, np.dtype]]:
    out = {}
    graph = model.graph
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        found = tensor_type(vi.type)
        if found is not None:
            out[vi.name] = found
    return out
