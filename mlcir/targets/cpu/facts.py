"""What a CPU target offers a schedule: its vector ISA, registers, caches and threads.

Default schedules (:mod:`.defaults`) choose tile sizes from these facts without measuring,
as IREE's ``KernelDispatch.cpp`` does from the target's CPU features. For ``llvm`` on the host
they are read from the machine (``/proc/cpuinfo`` flags, ``/sys/devices/system/cpu/cpu0/cache``,
the CPUs this process may run on); a target naming a CPU (``-mcpu=``) or features (``-mattr=``)
or another triple (``-mtriple=aarch64…``) gets that CPU's ISA instead, with typical caches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from mlcir.target import Target


@dataclass(frozen=True)
class CpuFacts:
    isa: str                # "avx512", "avx2", "sse", "neon"
    vector_bits: int        # width of one vector register
    vector_registers: int   # architectural vector registers (zmm0-31, ymm0-15, v0-31)
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    threads: int            # hardware threads a parallel loop may use

    def lanes(self, element_bytes: int = 4) -> int:
        """Elements of ``element_bytes`` in one vector register (16 f32 on AVX-512)."""
        return max(1, self.vector_bits // (8 * element_bytes))


# ISA presets with typical caches (Skylake-SP / Haswell / Nehalem / Cortex-A76 class); the host
# reads its own caches.
AVX512 = CpuFacts("avx512", 512, 32, 32 << 10, 1 << 20, 32 << 20, 1)
AVX2 = CpuFacts("avx2", 256, 16, 32 << 10, 256 << 10, 8 << 20, 1)
SSE = CpuFacts("sse", 128, 16, 32 << 10, 256 << 10, 8 << 20, 1)
NEON = CpuFacts("neon", 128, 32, 64 << 10, 512 << 10, 4 << 20, 1)

# LLVM CPU names (``-mcpu=``) by ISA; a name not listed is taken as the baseline of its triple.
_CPUS_AVX512 = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
                "icelake-server", "tigerlake", "sapphirerapids", "emeraldrapids",
                "graniterapids", "znver4", "znver5", "x86-64-v4")
_CPUS_AVX2 = ("haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
              "znver1", "znver2", "znver3", "x86-64-v3")


def _isa_from_flags(flags: set[str]) -> CpuFacts:
    """The widest vector ISA among CPU flags (``/proc/cpuinfo`` names or ``-mattr`` ones)."""
    if "avx512f" in flags:
        return AVX512
    if "avx2" in flags and "fma" in flags:
        return AVX2
    if "neon" in flags or "asimd" in flags:
        return NEON
    return SSE


def _size(text: str) -> int:
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _host_caches(base: CpuFacts) -> CpuFacts:
    """``base`` with the data/unified cache sizes of cpu0 (per core for L1/L2, shared L3)."""
    sizes: dict[int, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified"):
            sizes[level] = size
    return replace(base, l1d_bytes=sizes.get(1, base.l1d_bytes),
                   l2_bytes=sizes.get(2, base.l2_bytes), l3_bytes=sizes.get(3, base.l3_bytes))


def host_flags() -> set[str]:
    """The CPU flags of this machine (``/proc/cpuinfo``: ``avx2``, ``avx512f``, ``asimd``...)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def host_facts() -> CpuFacts:
    """The facts of the machine this process runs on."""
    flags = host_flags()
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return replace(_host_caches(_isa_from_flags(flags)), threads=threads)


def target_facts(target: Target | str = "llvm") -> CpuFacts:
    """The facts of an ``llvm`` target: the host's, unless ``-mcpu``/``-mattr``/``-mtriple``
    name another CPU. The thread count is the target's (``-threads=``) or, when the target
    leaves it to run time, the host's."""
    target = Target.parse(target)
    if target.kind != "llvm":
        raise ValueError(f"CPU facts are for llvm targets, not {target.kind!r}")
    options = dict(target.options)
    cpu = options.get("mcpu", "")
    triple = options.get("mtriple", "")
    host = host_facts()
    if "mattr" in options:
        # LLVM compiles for its generic CPU plus these features (not the host's):
        # ``-mattr=-avx512f`` alone is an SSE build, ``-mattr=+avx2,+fma`` an AVX2 one.
        flags = {f.lstrip("+") for f in options["mattr"].split(",")
                 if f and not f.startswith("-")}
        facts = _isa_from_flags(flags | ({"neon"} if triple.startswith("aarch64") else set()))
    elif cpu in _CPUS_AVX512:
        facts = AVX512
    elif cpu in _CPUS_AVX2:
        facts = AVX2
    elif triple.startswith(("aarch64", "arm64")):
        facts = NEON
    elif cpu and cpu != "native":
        facts = SSE
    else:
        facts = host
    return replace(facts, threads=target.threads or host.threads)
