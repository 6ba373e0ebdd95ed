"""``mlcir-opt``: ``mlir-opt`` with mlcir's dialects and passes.

Reads a file (or stdin), verifies it, runs a pipeline — ``--pass-pipeline=...`` and/or one flag
per pass (``--graph-to-loop --canonicalize``), mlcir and upstream passes mixed — and prints the
result. Errors are printed as ``file:line:col: error: message`` and make the exit status 1.
``--split-input-file`` handles ``// -----`` chunks independently; ``--verify-diagnostics``
checks ``// expected-error {{...}}`` annotations as mlir-opt does; ``--transform-script`` applies
a transform-dialect schedule (``@__transform_main``) to the input before the pipeline.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import TextIO

SPLIT_MARKER = "// -----"


@dataclass
class Diagnostic:
    severity: str  # error, warning, remark, note
    file: str
    line: int
    col: int
    message: str

    def render(self) -> str:
        if self.line == 0:  # not about a place in the input (a pipeline, an option)
            return f"mlcir-opt: {self.severity}: {self.message}"
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"


_LOC = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?:(?P<sev>error|warning|remark|note): )?(?P<msg>.*)$")


def diagnostics_from_text(text: str, default_file: str) -> list[Diagnostic]:
    """Split rendered ``loc: severity: message`` lines back into diagnostics."""
    out: list[Diagnostic] = []
    for line in text.splitlines():
        m = _LOC.match(line.strip())
        if m:
            msg = m.group("msg")
            sev = m.group("sev") or "error"
            if msg.startswith("note: "):
                sev, msg = "note", msg[len("note: "):]
            out.append(Diagnostic(sev, m.group("file"), int(m.group("line")), int(m.group("col")), msg))
        elif line.strip() and out:
            out[-1].message += "\n" + line
        elif line.strip():
            out.append(Diagnostic("error", default_file, 0, 0, line.strip()))
    return out


def _parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="mlcir-opt", description=__doc__.split("\n\n")[0],
        epilog="Any other --<name>[=<options>] flag runs the pass or pipeline <name> "
               "(see --list-passes).")
    parser.add_argument("input", nargs="?", default="-", help="input file (default: stdin)")
    parser.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    parser.add_argument("--pass-pipeline", default=None,
                        help="textual pipeline, e.g. 'builtin.module(graph-to-loop, mlcir-cpu)'")
    parser.add_argument("--split-input-file", nargs="?", const=SPLIT_MARKER, default=None,
                        help="process each chunk between '// -----' lines on its own")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check 'expected-error {{...}}' annotations against the diagnostics")
    parser.add_argument("--transform-script", default=None,
                        help="transform-dialect file whose @__transform_main is applied first")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true",
                        help="print the IR after every pass (to stderr)")
    parser.add_argument("--mlir-print-ir-before-all", action="store_true",
                        help="print the IR before every pass (to stderr)")
    parser.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    parser.add_argument("--mlir-print-op-generic", action="store_true", help="generic op form")
    parser.add_argument("--mlir-timing", action="store_true", help="time each pass")
    parser.add_argument("--allow-unregistered-dialect", action="store_true")
    parser.add_argument("--no-verify", action="store_true",
                        help="skip mlcir's verifiers after parsing (MLIR's still run)")
    parser.add_argument("--list-passes", action="store_true",
                        help="list mlcir's passes and pipelines and exit")
    return parser.parse_known_args(argv)


def _pass_flags(unknown: list[str]) -> list[str]:
    """``--name`` / ``--name=opts`` flags, in order, as pipeline elements."""
    elements = []
    for flag in unknown:
        if not flag.startswith("--"):
            raise SystemExit(f"mlcir-opt: error: unexpected argument {flag!r}")
        name, eq, opts = flag[2:].partition("=")
        opts = opts.strip().strip("'\"")
        elements.append(f"{name}{{{opts}}}" if eq and opts else name)
    return elements


@dataclass
class Expected:
    severity: str
    line: int
    message: str
    source_line: int
    matched: bool = False


_EXPECTED = re.compile(r"expected-(error|warning|remark|note)\s*(@[^\s{]+)?\s*\{\{(.*?)\}\}")


def expectations(text: str, first_line: int) -> list[Expected]:
    """``// expected-error @+1 {{msg}}`` annotations of a chunk (line numbers in the file)."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        lineno = first_line + i
        for m in _EXPECTED.finditer(line):
            where, target = m.group(2), lineno
            if where:
                if where.startswith("@+") or where.startswith("@-"):
                    target = lineno + int(where[1:])
                elif where == "@above":
                    target = lineno - 1
                elif where == "@below":
                    target = lineno + 1
                elif where == "@unknown":
                    target = 0
            out.append(Expected(m.group(1), target, m.group(3), lineno))
    return out


def check_expectations(diags: list[Diagnostic], expected: list[Expected], file: str,
                       err: TextIO) -> bool:
    ok = True
    for d in diags:
        match = next((e for e in expected if not e.matched and e.severity == d.severity
                      and e.line == d.line and e.message in d.message), None)
        if match is None:
            if d.severity == "note" and not any(e.severity == "note" for e in expected):
                continue
            err.write(f"{d.file}:{d.line}:{d.col}: error: unexpected {d.severity}: {d.message}\n")
            ok = False
        else:
            match.matched = True
    for e in expected:
        if not e.matched:
            err.write(f"{file}:{e.source_line}:1: error: expected {e.severity} \"{e.message}\" "
                      "was not produced\n")
            ok = False
    return ok


def process_chunk(text: str, file: str, args: argparse.Namespace, pipeline: str | None,
                  ) -> tuple[str | None, list[Diagnostic]]:
    """Parse, verify, transform and lower one chunk; return the printed IR or diagnostics."""
    from mlir import ir

    from mlcir.errors import MlcirError
    from mlcir.ir import captured_diagnostics, make_context, parse
    from mlcir.passes import run_pipeline

    ctx = make_context(allow_unregistered=args.allow_unregistered_dialect)
    with ctx, captured_diagnostics(ctx) as emitted:
        try:
            module = parse(text, source_name=file, verify=not args.no_verify)
            if args.transform_script:
                from mlcir.schedule.materialize import apply_schedule_file

                with ir.Location.unknown():  # inlining builds ops (a recorded compute_inline)
                    apply_schedule_file(module, args.transform_script)
            if pipeline:
                run_pipeline(module, pipeline,
                             print_ir_after_all=args.mlir_print_ir_after_all,
                             print_ir_before_all=args.mlir_print_ir_before_all,
                             timing=args.mlir_timing)
            printed = module.operation.get_asm(enable_debug_info=args.mlir_print_debuginfo,
                                               print_generic_op_form=args.mlir_print_op_generic)
        except MlcirError as error:
            diags = diagnostics_from_text(str(error), file)
            extra = [Diagnostic(s, *(_split_loc(loc, file)), m) for s, loc, m in emitted
                     if not any(d.message == m for d in diags)]
            return None, extra + diags
        except ir.MLIRError as error:
            return None, diagnostics_from_text(str(error), file)
    # Warnings and remarks emitted during a successful run are diagnostics too.
    return printed, [Diagnostic(s, *(_split_loc(loc, file)), m) for s, loc, m in emitted]


def _split_loc(loc: str, file: str) -> tuple[str, int, int]:
    m = re.match(r"^(.*):(\d+):(\d+)$", loc)
    if m:
        return m.group(1), int(m.group(2)), int(m.group(3))
    return file, 0, 0


def main(argv: list[str] | None = None) -> int:
    args, unknown = _parse_args(sys.argv[1:] if argv is None else argv)
    if args.list_passes:
        from mlcir.passes import describe_all

        for name, summary in describe_all():
            print(f"  --{name:<32} {summary}")
        print("\nUpstream MLIR passes are accepted too (see mlir-opt --help).")
        return 0
    elements = _pass_flags(unknown)
    pipeline = args.pass_pipeline
    if elements:
        pipeline = ", ".join(([pipeline] if pipeline else []) + elements)

    file = "<stdin>" if args.input == "-" else args.input
    try:
        source = sys.stdin.read() if args.input == "-" else \
            open(args.input, encoding="utf-8").read()
    except OSError as error:
        print(f"mlcir-opt: error: cannot read {file}: {error.strerror}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as error:
        print(f"mlcir-opt: error: {file} is not MLIR text (not UTF-8: {error.reason} at byte "
              f"{error.start})", file=sys.stderr)
        return 1

    chunks = [source]
    if args.split_input_file:
        marker = re.compile(r"^" + re.escape(args.split_input_file) + r"[ \t]*$", re.MULTILINE)
        chunks = marker.split(source)
    outputs, failed, line = [], False, 1
    for chunk in chunks:
        first_line = line
        line += chunk.count("\n")
        padded = "\n" * (first_line - 1) + chunk  # keep file line numbers in diagnostics
        try:
            printed, diags = process_chunk(padded, file, args, pipeline)
        except Exception as error:  # a bad pipeline or option: say what, no traceback
            from mlcir.errors import MlcirError

            if not isinstance(error, MlcirError):
                raise
            print(f"mlcir-opt: error: {error}", file=sys.stderr)
            return 1
        if args.verify_diagnostics:
            if not check_expectations(diags, expectations(chunk, first_line), file, sys.stderr):
                failed = True
        else:
            for d in diags:
                print(d.render(), file=sys.stderr)
            if printed is None:
                failed = True
        if printed is not None:
            outputs.append(printed)
    text = f"\n{SPLIT_MARKER}\n".join(outputs) + ("\n" if outputs else "")
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
