"""``mlcir-gpu-check-launch``: refuse kernels whose launch exceeds a device limit, by name.

A launch beyond the limits compiles fine and fails only when the driver launches it ("too many
resources requested", "invalid argument"), far from the schedule that caused it. This pass
reads each ``gpu.launch`` after mapping (grid and block sizes are constants there) and its
workgroup attributions, and raises :class:`~mlcir.errors.LaunchConfigError` naming the kernel
(its blocks and location), the value and the limit. The limits are those of every NVIDIA GPU
since compute capability 3.0 (sm_80 and sm_90 included): 1024 threads per block, block
x/y ≤ 1024 and z ≤ 64, grid x ≤ 2^31-1 and y/z ≤ 65535, 48 KiB of static shared memory per
block. Registers per thread are known only after ``ptxas``; see ``mlcir.targets.cuda``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlcir.errors import LaunchConfigError
from mlcir.ir import format_location

from .gpu_ir import AXES, constant_index, memref_bytes, walk
from .registry import ModulePass, register_pass


@dataclass(frozen=True)
class DeviceLimits:
    max_threads_per_block: int = 1024
    max_block: tuple[int, int, int] = (1024, 1024, 64)
    max_grid: tuple[int, int, int] = (2 ** 31 - 1, 65535, 65535)
    max_static_shared_bytes: int = 48 * 1024


def kernel_name(launch: ir.Operation) -> str:
    """``GPU kernel of block 'C' in function 'main' (at file:line:col)``, for a ``gpu.launch``
    or the block-mapped forall that becomes one."""
    blocks: list[str] = []
    for op in walk(launch):
        if "loop.block" in op.attributes:
            name = ir.StringAttr(op.attributes["loop.block"]).value
            if name not in blocks:
                blocks.append(name)
    parent = launch.operation.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    where = ""
    if parent is not None:
        where = f" in function '{ir.StringAttr(parent.attributes['sym_name']).value}'"
    what = f" of block{'s' if len(blocks) > 1 else ''} {', '.join(repr(b) for b in blocks)}" \
        if blocks else ""
    return f"GPU kernel{what}{where} (at {format_location(launch.location)})"


def launch_sizes(launch: ir.Operation) -> tuple[list[int | None], list[int | None]]:
    """Grid and block sizes of a ``gpu.launch`` (None where not a constant)."""
    segments = list(ir.DenseI32ArrayAttr(launch.attributes["operandSegmentSizes"]))
    start = segments[0]  # async dependencies come first
    operands = list(launch.operands)
    grid = [constant_index(operands[start + i]) for i in range(3)]
    block = [constant_index(operands[start + 3 + i]) for i in range(3)]
    return grid, block


def shared_bytes(launch: ir.Operation) -> int:
    count = ir.IntegerAttr(launch.attributes["workgroup_attributions"]).value \
        if "workgroup_attributions" in launch.attributes else 0
    args = list(launch.regions[0].blocks[0].arguments)
    first = 12  # block ids, thread ids, grid sizes, block sizes
    return sum(memref_bytes(ir.MemRefType(a.type)) for a in args[first:first + count])


def check_sizes(grid: list[int | None], block: list[int | None], shared: int,
                limits: DeviceLimits = DeviceLimits()) -> list[str]:
    """What is wrong with a launch of these sizes (empty when it fits the device)."""
    problems = []
    for kind, sizes, maxima in (("block", block, limits.max_block), ("grid", grid, limits.max_grid)):
        for axis, size, maximum in zip(AXES, sizes, maxima):
            if size is None:
                continue
            if size < 1:
                problems.append(f"{kind} dim {axis} is {size}; it must be at least 1")
            elif size > maximum:
                problems.append(f"{kind} dim {axis} is {size}, above the limit of {maximum}")
    if None not in block:
        threads = block[0] * block[1] * block[2]
        if threads > limits.max_threads_per_block:
            problems.append(f"{threads} threads per block ({block[0]} x {block[1]} x {block[2]}), "
                            f"above the limit of {limits.max_threads_per_block} threads per block")
    if shared > limits.max_static_shared_bytes:
        problems.append(f"{shared} bytes of static shared memory per block, above the limit of "
                        f"{limits.max_static_shared_bytes} bytes (48 KiB)")
    return problems


def check_launch(launch: ir.Operation, limits: DeviceLimits = DeviceLimits()) -> list[str]:
    grid, block = launch_sizes(launch)
    return check_sizes(grid, block, shared_bytes(launch), limits)


def raise_if(problems: list[str], kernel: ir.Operation) -> None:
    if problems:
        raise LaunchConfigError(f"{kernel_name(kernel)} cannot be launched: " + "; ".join(problems))


@register_pass
@dataclass
class GpuCheckLaunch(ModulePass):
    name = "mlcir-gpu-check-launch"
    summary = "Refuse gpu.launch ops beyond device limits (threads, grid, shared memory)"

    def run(self, module: ir.Operation) -> None:
        for launch in walk(module, ("gpu.launch",)):
            raise_if(check_launch(launch), launch)
