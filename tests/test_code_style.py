"""Code states rules; docs keep the history (docs/decisions.md, "Comments and docs").

Every ``.py`` file of the package (``mlcir/``, ``dialects/``, ``passes/``, ``tools/``) is read
with ``ast`` and ``tokenize``. Two rules are checked:

- a module docstring is at most ``DOCSTRING_LINES_MAX`` lines: it says what the module does and
  why, and points to docs/ for the rest;
- no comment or docstring quotes a timing figure (``12 us``, ``3.5 ms``, GFLOPS, shares of peak,
  ``N -> M`` between numbers, ``1.5x faster``): measurements belong in docs/measurements/ and
  docs/decisions.md, where the code points with ``docs/...#anchor``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("mlcir", "dialects", "passes", "tools")

DOCSTRING_LINES_MAX = 25

# Timing figures and their usual companions in a lab notebook.
TIMING = re.compile(
    r"\d(?:[\d.,]*\d)?\s*(?:us|µs|ms)\b"            # 12 us, 3.5 ms, 115-152 us
    r"|\b\d[\d.,]*\s*GFLOP/?S"                          # 160 GFLOPS (not the unit's name)
    r"|\b\d[\d.,]*\s*%\s*of\s+peak"                     # 94% of peak (not "% of peak")
    r"|\d(?:\.\d+)?\s*(?:->|→)\s*\d"                  # 1238 -> 1157, 0.21 -> 0.37
    r"|\d(?:\.\d+)?\s*(?:x|%)\s+(?:faster|slower)")   # 1.9x faster, 20% slower

# Arrows between numbers that are not timings: shapes, channel counts, lane splits.
NOT_TIMINGS = {
    "mlcir/testing/onnx_models.py": ("28 -> 26 -> 24", "3->64", "(224 -> 56)"),
}


def package_files() -> list[str]:
    files = []
    for folder in PACKAGE_DIRS:
        files += [str(p.relative_to(ROOT)) for p in sorted((ROOT / folder).rglob("*.py"))]
    return files


def comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """(line number, text) of every comment line and docstring line of a module."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines += [(first.lineno + i, text)
                          for i, text in enumerate(first.value.value.splitlines())]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines.append((token.start[0], token.string))
    # A module-level ``#:`` comment documents a constant, so it counts like any other comment.
    return sorted(lines)


def timing_figures(rel: str, source: str) -> list[str]:
    """The comment and docstring lines of ``rel`` that quote a timing figure."""
    allowed = NOT_TIMINGS.get(rel, ())
    found = []
    for lineno, text in comments_and_docstrings(source):
        for phrase in allowed:
            text = text.replace(phrase, "")
        if TIMING.search(text):
            found.append(f"{rel}:{lineno}: {text.strip()}")
    return found


def module_docstring_lines(source: str) -> int:
    doc = ast.get_docstring(ast.parse(source), clean=False)
    return len(doc.splitlines()) if doc else 0


def test_timing_pattern_matches_figures_and_not_rules():
    for figure in ("took 94 us unscheduled", "3.5 ms", "115-152 us", "160 GFLOPS",
                   "94% of peak", "1238 -> 1157", "0.21 -> 0.37", "1.9x faster", "20% slower"):
        assert TIMING.search(figure), figure
    for rule in ("at most 8 columns (POOLING_COLUMNS)", "-> None", "a 64^3 matmul",
                 "docs/decisions.md#threads", "16 lanes x 32 registers", "items",
                 "GFLOP/s and % of peak", "peak GFLOPS = 2 x lanes", "f32 GFLOPS"):
        assert not TIMING.search(rule), rule


def test_checker_finds_a_figure_in_a_comment_and_a_docstring():
    source = '"""A module.\n\nMeasured 12 us."""\nX = 1  # was 3.5 ms\ns = "12 us in code"\n'
    assert timing_figures("x.py", source) == ["x.py:3: Measured 12 us.", "x.py:4: # was 3.5 ms"]


@pytest.mark.parametrize("rel", package_files())
def test_module_docstring_is_short(rel):
    lines = module_docstring_lines((ROOT / rel).read_text())
    assert lines <= DOCSTRING_LINES_MAX, (
        f"{rel}: module docstring of {lines} lines (at most {DOCSTRING_LINES_MAX}): say what the "
        f"module does and why, and move the rest to docs/")


@pytest.mark.parametrize("rel", package_files())
def test_no_timing_figures_in_comments(rel):
    found = timing_figures(rel, (ROOT / rel).read_text())
    assert not found, ("timing figures in comments or docstrings (move them to "
                       "docs/measurements/ and point there):\n" + "\n".join(found))
