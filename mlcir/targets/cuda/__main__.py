"""``python -m mlcir.targets.cuda kernel.mlir [--arch sm_80]``: print each kernel's PTX;
``python -m mlcir.targets.cuda model.mlcir``: print the kernels a saved model embeds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlcir.errors import BuildError, LoadError, MlcirError
from mlcir.ir import make_context, parse
from mlcir.runtime.model_file import read_library
from mlcir.target import Target

from .codegen import compile_cuda, ptx_of
from .elf import embedded_kernels


def main(argv: list[str] | None = None) -> int:
    """Print each kernel's PTX, or the kernels of a saved model (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m mlcir.targets.cuda",
                                     description="Compile kernels for CUDA and print their PTX, "
                                                 "or print the kernels of a saved cuda model.")
    parser.add_argument("file", help="an MLIR file (graph or loop level), '-' for stdin, or a "
                                     "saved model (.mlcir) compiled for cuda")
    parser.add_argument("--arch", default="sm_90", help="NVVM chip (default sm_90)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per block of the default mapping")
    args = parser.parse_args(argv)
    try:
        if args.file != "-" and _is_zip(args.file):
            _print_saved_kernels(args.file)
            return 0
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        target = Target.parse(f"cuda -arch={args.arch} -format=isa" + (
            f" -threads={args.threads}" if args.threads else ""))
        with make_context():
            module = parse(text, source_name=args.file)
            compile_cuda(module, target)
            for name, ptx in ptx_of(module).items():
                print(f"// gpu.binary @{name}")
                print(ptx)
    except MlcirError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _is_zip(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def _print_saved_kernels(path: str) -> None:
    """Each kernel binary of a saved cuda model: PTX as text, a cubin as its size."""
    meta, library = read_library(path)
    info = meta.get("cuda")
    if not isinstance(info, dict) or not isinstance(info.get("kernels"), list):
        raise LoadError(f"{path}: not a model compiled for cuda (target '{meta['target']}')")
    try:
        binaries = embedded_kernels(library, [k["symbol"] for k in info["kernels"]])
    except BuildError as error:
        raise LoadError(f"{path}: {error}") from None
    for kernel in info["kernels"]:
        data = binaries[kernel["symbol"]]
        print(f"// gpu.binary @{kernel['name']} ({kernel['format']}, {len(data)} bytes)")
        if kernel["format"] == "isa":
            print(data.rstrip(b"\0").decode())
        else:
            kind = {"bin": "a cubin", "fatbin": "a fat binary"}.get(kernel["format"], "binary")
            print(f"// {kind} for {info.get('arch')}, not printed")


if __name__ == "__main__":
    raise SystemExit(main())
