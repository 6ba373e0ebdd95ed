"""``mlcir-gpu-device-buffers``: kernels read and write device memory; numpy arrays are copied.

Runs after ``mlcir-gpu-map`` (every compute op is inside a ``gpu.launch``):

- **Entry functions** (public, with a body) are split in two. ``<name>__device`` is the
  original body: its arguments are device buffers, it only launches kernels. ``<name>`` keeps
  the C interface the runtime calls with numpy arrays: it allocates a device buffer per
  argument (``gpu.alloc``), copies the inputs in (``gpu.memcpy``), calls ``<name>__device``,
  copies back the outputs (the last ``mlcir.gpu.outputs`` arguments, see
  ``mlcir-gpu-mark-outputs``) and every argument the body may write, and frees the buffers.
  Benchmarks call ``<name>__device`` on device buffers to time the kernels alone.
- **Intermediates** allocated on the host side (``memref.alloc``) become ``gpu.alloc`` /
  ``gpu.dealloc``.
- **Buffers inside a kernel**: ``#gpu.address_space<workgroup>`` allocations (a schedule's
  ``cache_read(..., "shared")``) become workgroup attributions of their ``gpu.launch`` (PTX
  ``.shared``); other static allocations become ``memref.alloca`` at the start of the kernel
  (per-thread memory). Their ``memref.dealloc`` ops are dropped.
- **Globals** (constants, bound weights) read by a kernel: the ``memref.get_global`` (and the
  views of it) are cloned into the launch, so outlining copies the global into the GPU module.

Anything left that reads or writes device memory on the host (a ``memref.load`` outside any
kernel) is refused with the op named: it would dereference a device pointer on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func, gpu, memref

from mlcir.errors import BuildError

from .gpu_ir import defining_op, describe, in_launch, memory_space, op_name, walk
from .gpu_mark_outputs import OUTPUTS_ATTR, is_public
from .graph_to_loop import functions
from .registry import ModulePass, register_pass

DEVICE_SUFFIX = "__device"
DEVICE_ATTR = "mlcir.gpu.device"  # on the device half of an entry function
VIEWS = {"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.collapse_shape",
         "memref.expand_shape", "memref.transpose", "memref.view"}
READS = {"memref.load", "vector.load", "vector.transfer_read", "vector.maskedload",
         "vector.gather", "memref.dim", "memref.extract_strided_metadata",
         "memref.extract_aligned_pointer_as_index", "gpu.memcpy", "gpu.dealloc",
         "memref.dealloc"}
MEMORY_OPS = {"memref.load", "memref.store", "vector.load", "vector.store", "vector.transfer_read",
              "vector.transfer_write", "vector.maskedload", "vector.maskedstore",
              "vector.gather", "vector.scatter", "memref.atomic_rmw", "memref.generic_atomic_rmw"}


def root_of(value: ir.Value) -> ir.Value:
    """The buffer a memref value views (through subviews, casts, reshapes)."""
    for _ in range(64):
        owner = defining_op(value)
        if owner is None or owner.name not in VIEWS:
            return value
        value = owner.operands[0]
    return value


def may_write(value: ir.Value, depth: int = 0) -> bool:
    """Whether some use of the memref ``value`` may write it (conservative). Uses inside
    kernels are direct uses of the value (a launch captures values from above)."""
    for use in value.uses:
        owner = use.owner.operation
        name = owner.name
        if name in READS:
            if name == "gpu.memcpy" and use.operand_number == 0:
                return True
            continue
        if name in VIEWS:
            if depth > 16 or may_write(owner.results[0], depth + 1):
                return True
            continue
        if name.startswith("linalg."):
            inputs = len(owner.opview.inputs) if hasattr(owner.opview, "inputs") else 0
            if use.operand_number < inputs:
                continue
        return True  # linalg outs, stores, calls and anything unknown may write
    return False


def _is_inside(op: ir.Operation, container: ir.Operation) -> bool:
    parent = op.operation.parent
    while parent is not None:
        if parent == container:
            return True
        parent = parent.parent
    return False


@register_pass
@dataclass
class GpuDeviceBuffers(ModulePass):
    name = "mlcir-gpu-device-buffers"
    summary = ("Device buffers for GPU kernels: entry copies, gpu.alloc for intermediates, "
               "shared memory as workgroup attributions, globals sunk into kernels")

    def run(self, module: ir.Operation) -> None:
        for fn in functions(module):
            if not fn.regions[0].blocks:
                continue
            for launch in walk(fn.operation, ("gpu.launch",)):
                self._kernel_buffers(launch)
                self._sink_globals(launch)
            self._host_allocations(fn.operation)
        entries = [fn for fn in functions(module) if is_public(fn.operation)
                   and DEVICE_ATTR not in fn.attributes]
        for fn in entries:
            self._split_entry(fn)
        for fn in functions(module):
            if fn.regions[0].blocks:
                self._check_host_accesses(fn.operation)

    # -- inside kernels ----------------------------------------------------------------------
    @staticmethod
    def _kernel_buffers(launch: ir.Operation) -> None:
        body = launch.regions[0].blocks[0]
        for alloc in walk(launch, ("memref.alloc",)):
            t = ir.MemRefType(alloc.results[0].type)
            if not t.has_static_shape:
                raise BuildError(f"{describe(alloc)} allocates a buffer of dynamic shape {t} "
                                 "inside a GPU kernel; kernel buffers must be static")
            for use in list(alloc.results[0].uses):
                if use.owner.operation.name == "memref.dealloc":
                    use.owner.operation.erase()
            space = memory_space(t)
            if space == "workgroup":
                count = (ir.IntegerAttr(launch.attributes["workgroup_attributions"]).value
                         if "workgroup_attributions" in launch.attributes else 0)
                arg = body.add_argument(t, alloc.location)
                launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(64), count + 1)
                alloc.results[0].replace_all_uses_with(arg)
            else:
                with ir.InsertionPoint.at_block_begin(body), alloc.location:
                    alloca = memref.alloca(t, [], [])
                alloc.results[0].replace_all_uses_with(alloca)
            alloc.erase()

    @staticmethod
    def _sink_globals(launch: ir.Operation) -> None:
        """Clone ``memref.get_global`` (and views of it) used in ``launch`` into its body."""
        body = launch.regions[0].blocks[0]
        anchor = body.operations[0]
        cloned: dict[str, ir.Value] = {}

        def sink(value: ir.Value) -> ir.Value | None:
            owner = defining_op(value)
            if owner is None or _is_inside(owner, launch):
                return None
            if owner.name == "memref.get_global":
                key = str(owner.attributes["name"])
                if key not in cloned:
                    cloned[key] = owner.clone(ir.InsertionPoint(anchor)).results[0]
                return cloned[key]
            if owner.name in VIEWS:
                source = sink(owner.operands[0])
                if source is None:
                    return None
                copy = owner.clone(ir.InsertionPoint(anchor))
                copy.operands[0] = source
                return copy.results[0]
            return None

        for op in walk(launch):
            for i, operand in enumerate(op.operands):
                if isinstance(operand.type, ir.MemRefType) and not _defined_inside(operand, launch):
                    replacement = sink(operand)
                    if replacement is not None:
                        op.operands[i] = replacement

    # -- host side ---------------------------------------------------------------------------
    @staticmethod
    def _host_allocations(fn: ir.Operation) -> None:
        for alloc in walk(fn, ("memref.alloc",)):
            if in_launch(alloc):
                continue
            t = ir.MemRefType(alloc.results[0].type)
            if memory_space(t) == "workgroup":
                raise BuildError(f"{describe(alloc)} allocates workgroup (shared) memory outside "
                                 "a GPU kernel; compute_at the cache inside a blockIdx loop")
            with ir.InsertionPoint(alloc), alloc.location:
                dynamic = list(alloc.operands)
                new = gpu.AllocOp(t, None, [], dynamic, []).results[0]
            alloc.results[0].replace_all_uses_with(new)
            alloc.erase()
        for dealloc in walk(fn, ("memref.dealloc",)):
            if in_launch(dealloc):
                continue
            root = root_of(dealloc.operands[0])
            if op_name(root) == "gpu.alloc":
                with ir.InsertionPoint(dealloc), dealloc.location:
                    gpu.DeallocOp(None, [], dealloc.operands[0])
                dealloc.erase()

    @staticmethod
    def _split_entry(fn: func.FuncOp) -> None:
        name = fn.sym_name.value
        blocks = fn.regions[0].blocks
        if len(list(blocks)) != 1:
            raise BuildError(f"function '{name}': a body with several blocks cannot be split "
                             "into host copies and device code")
        args = list(fn.arguments)
        for i, arg in enumerate(args):
            if isinstance(arg.type, ir.MemRefType):
                t = ir.MemRefType(arg.type)
                if not t.has_static_shape or t.affine_map != ir.AffineMap.get_identity(t.rank):
                    raise BuildError(f"function '{name}': argument #{i} has type {t}; the cuda "
                                     "target needs static shapes with the identity layout")
        outputs = ir.IntegerAttr(fn.attributes[OUTPUTS_ATTR]).value \
            if OUTPUTS_ATTR in fn.attributes else 0
        first_output = len(args) - outputs
        device = fn.operation.clone(ir.InsertionPoint(fn))
        device.move_after(fn)
        device_name = name + DEVICE_SUFFIX
        device.attributes["sym_name"] = ir.StringAttr.get(device_name)
        device.attributes[DEVICE_ATTR] = ir.UnitAttr.get()
        written = [isinstance(a.type, ir.MemRefType) and may_write(a)
                   for a in device.regions[0].blocks[0].arguments]
        block = blocks[0]
        for op in reversed(list(block.operations)):
            op.erase()
        with ir.InsertionPoint(block), fn.location:
            buffers = []
            for i, arg in enumerate(args):
                if not isinstance(arg.type, ir.MemRefType):
                    buffers.append(arg)
                    continue
                buf = gpu.AllocOp(arg.type, None, [], [], []).results[0]
                if i < first_output:
                    gpu.MemcpyOp(None, [], buf, arg)
                buffers.append(buf)
            func.CallOp([], ir.FlatSymbolRefAttr.get(device_name), buffers)
            for i, (arg, buf) in enumerate(zip(args, buffers)):
                if buf is arg:
                    continue
                if i >= first_output or written[i]:
                    gpu.MemcpyOp(None, [], arg, buf)
                gpu.DeallocOp(None, [], buf)
            func.ReturnOp([])

    @staticmethod
    def _check_host_accesses(fn: ir.Operation) -> None:
        device_args = set()
        if DEVICE_ATTR in fn.attributes:
            device_args = {a for a in fn.regions[0].blocks[0].arguments}
        for op in walk(fn):
            if in_launch(op):
                continue
            if op.name in MEMORY_OPS or op.name.startswith("linalg.") and op.name not in (
                    "linalg.yield", "linalg.index"):
                for operand in op.operands:
                    if not isinstance(operand.type, ir.MemRefType):
                        continue
                    root = root_of(operand)
                    on_device = root in device_args or op_name(root) == "gpu.alloc"
                    if on_device:
                        raise BuildError(f"{describe(op)} accesses device memory on the host "
                                         "(outside any GPU kernel); bind its loops to "
                                         "blockIdx/threadIdx or leave the block unscheduled")
            if op.name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                target = _lookup_function(fn, callee)
                if target is not None and not target.regions[0].blocks:
                    raise BuildError(f"{describe(op)} calls '{callee}', a function with no body "
                                     "(a library function runs on the host, in Python); the "
                                     "cuda target cannot call it")
            if op.name == "gpu.launch":
                for value in _captured(op):
                    root = root_of(value)
                    if op_name(root) in ("memref.alloca", "memref.get_global"):
                        raise BuildError(f"a GPU kernel at {describe(op)} uses host memory "
                                         f"({op_name(root)}); only device buffers reach kernels")


def _lookup_function(fn: ir.Operation, name: str) -> ir.Operation | None:
    module = fn.parent
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name == "func.func" and \
                ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op.operation
    return None


def _defined_inside(value: ir.Value, container: ir.Operation) -> bool:
    owner = defining_op(value)
    if owner is None:
        parent = value.owner.owner.operation
        return parent == container or _is_inside(parent, container)
    return _is_inside(owner, container)



def _captured(launch: ir.Operation) -> list[ir.Value]:
    """Memref values defined outside ``launch`` and used inside it."""
    out = []
    for op in walk(launch):
        for operand in op.operands:
            if isinstance(operand.type, ir.MemRefType) and not _defined_inside(operand, launch) \
                    and operand not in out:
                out.append(operand)
    return out
