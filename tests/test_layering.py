"""The package's layering: who may import whom (docs/decisions.md, "Layering").

Every ``.py`` file of the package (``mlcir/``, ``dialects/``, ``passes/``, ``tools/``) is parsed
with ``ast``, function-local imports included, and mapped to its installed module name. Two
rules are checked:

- no import circle (among the files of one package folder, nor across folders);
- no import from a lower layer to a higher one (``import mlcir`` or ``from mlcir import x``
  from inside the package counts as importing the top, ``mlcir/__init__.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]

# Source folder -> installed package (pyproject.toml's package-dir).
PACKAGE_DIRS = {"mlcir": "mlcir", "dialects": "mlcir.dialects", "passes": "mlcir.passes",
                "tools": "mlcir.tools"}

# Layers, low to high (docs/decisions.md): a module may import only modules of its own layer or
# lower ones. A module is matched by its name or its package's; the top, mlcir/__init__.py, is
# layer 6.
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("mlcir.errors", "mlcir.version", "mlcir.paths", "mlcir.dialects", "mlcir.ir",
         "mlcir.transform", "mlcir.target")),
    (1, ("mlcir.passes",)),
    (2, ("mlcir.runtime", "mlcir.schedule", "mlcir.te", "mlcir.uma")),
    (3, ("mlcir.targets",)),
    (4, ("mlcir.tune", "mlcir.frontend")),
    (5, ("mlcir.driver", "mlcir.confirm", "mlcir.peak", "mlcir.autotvm")),
    (6, ("mlcir.cli", "mlcir.tools", "mlcir.testing")),
]
TOP = 6


def layer_of(module: str) -> int:
    if module == "mlcir":
        return TOP
    for layer, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return layer
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def package_modules() -> dict[str, Path]:
    """Installed module name -> source file, for every file of the package."""
    modules = {}
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package] + parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules that ``name`` imports, anywhere in the file."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # `from pkg import sub` imports the submodule when there is one, else pkg itself;
            # `from mlcir import x` also imports the top (it names the top's attribute).
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin
                       for a in node.names]
            if origin == "mlcir":
                targets.append("mlcir")
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): the modules that
    import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One import cycle through each component of :func:`import_circles`."""
    return [_cycle_through(graph, c) for c in import_circles(graph)]


def _cycle_through(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest import cycle through the first module of a component, for the message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return component


def upward_imports() -> list[str]:
    return sorted(f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
                  for name, targets in import_graph().items() for target in targets
                  if layer_of(target) > layer_of(name))


def test_every_module_has_a_layer():
    for name in package_modules():
        layer_of(name)


def test_the_parser_sees_function_local_and_relative_imports():
    graph = import_graph()
    assert "mlcir.dialects" in graph["mlcir.ir"]  # inside make_context
    assert "mlcir.errors" in graph["mlcir.ir"]    # from .errors import ...


def test_cycle_finder_reports_the_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_import_circle():
    """None within a package folder, nor across folders (a stricter form of the rule)."""
    graph = import_graph()
    circles = import_circles(graph)
    assert not circles, "import circles:\n" + "\n".join(
        f"{' -> '.join(_cycle_through(graph, c))}   (all of: {', '.join(c)})" for c in circles)


def test_no_import_from_a_lower_layer_to_a_higher_one():
    upward = upward_imports()
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)
