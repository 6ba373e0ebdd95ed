"""Reading a compiled CUDA model's ELF shared library without loading it: the kernel binaries
it embeds and the libraries it needs."""

from __future__ import annotations

import struct
from typing import Sequence

from mlcir.errors import BuildError


def _elf_sections(library: bytes) -> list[tuple[int, int, int, int, int, int]]:
    """``(type, addr, offset, size, link, entsize)`` of each section of an ELF64 library."""
    if library[:4] != b"\x7fELF" or library[4] != 2 or library[5] != 1:
        raise BuildError("not a 64-bit little-endian ELF shared library")
    shoff, = struct.unpack_from("<Q", library, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", library, 0x3A)
    return [struct.unpack_from("<4xI8xQQQI12xQ", library, shoff + i * shentsize)
            for i in range(shnum)]


def _c_string(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode()


def embedded_kernels(library: bytes, symbols: Sequence[str]) -> dict[str, bytes]:
    """The contents of the named data symbols (``<kernel>_binary``) of an ELF64 shared library:
    the kernel binaries a CUDA model's constructors hand to the driver (PTX text ends with a
    NUL). Read from the static symbol table; works without loading the library."""
    sections = _elf_sections(library)
    wanted, found = set(symbols), {}
    for kind, _, offset, size, link, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][2]
        for pos in range(offset, offset + size, entsize):
            name_at, _, _, shndx, value, length = struct.unpack_from("<IBBHQQ", library, pos)
            name = _c_string(library, strtab + name_at)
            if name in wanted and 0 < shndx < len(sections):
                _, addr, sec_offset, _, _, _ = sections[shndx]
                start = sec_offset + value - addr
                found[name] = library[start:start + length]
    missing = sorted(wanted - set(found))
    if missing:
        raise BuildError(f"the library has no symbol {', '.join(missing)} (stripped, or not "
                         "compiled by mlcir for cuda)")
    return found


def needed_libraries(library: bytes) -> list[str]:
    """The ``DT_NEEDED`` entries of an ELF64 shared library (the sonames it needs loaded)."""
    sections = _elf_sections(library)
    needed = []
    for kind, _, offset, size, link, _ in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][2]
        for pos in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", library, pos)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                needed.append(_c_string(library, strtab + value))
    return needed
