"""Schedules: TensorIR-style primitives over loop-level kernels, recorded as replayable traces
and emitted as transform-dialect scripts."""

from __future__ import annotations

from .errors import ScheduleError
from .instruction import BlockRV, ExprRV, Instruction, InstructionKind, LoopRV
from .schedule import LoopInfo, Schedule
from .tensorize import TensorIntrin, matmul_desc, register_intrin
from .trace import RESAMPLE, Trace

__all__ = ["RESAMPLE", "BlockRV", "ExprRV", "Instruction", "InstructionKind", "LoopInfo",
           "LoopRV", "Schedule", "ScheduleError", "TensorIntrin", "Trace", "matmul_desc",
           "register_intrin"]
