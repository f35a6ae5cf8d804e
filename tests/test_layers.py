"""The import graph of ``src/surrobench``: no cycle between files or packages, no import up the layers.

The layers, bottom to top, as ``docs/design.md`` draws them. Every ``import`` statement counts, wherever it
sits (a function-level import is a dependency too, only a later one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "surrobench"

#: Bottom to top. ``errors`` and ``version`` are the floor under ``records``; the package itself
#: (``surrobench/__init__.py``, the public façade) and ``__main__`` sit on top.
LAYERS = (
    "errors",
    "version",
    "records",
    "workload",
    "execution",
    "collect",
    "trace",
    "analysis",
    "results",
    "tune",
    "api",
    "report",
    "cli",
    "__init__",
    "__main__",
)
#: What the floor imports from surrobench: nothing, or the floor below it.
FLOOR = {"errors": set(), "version": set(), "records": {"errors"}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The surrobench modules ``name`` imports (``from pkg import mod`` names the module ``pkg.mod``)."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "surrobench"}
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target.split(".")[0] == "surrobench":
                found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
    return {m for m in found if m != name}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_package_has_a_layer(graph):
    assert sorted({_layer(m) for m in graph} - set(LAYERS)) == []


def test_no_import_goes_up_a_layer(graph):
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if rank[_layer(t)] > rank[_layer(m)])
    assert upward == []


def test_the_floor_imports_nothing_of_ours_above_it(graph):
    leaks = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if _layer(m) in FLOOR
        for t in targets
        if _layer(t) != _layer(m) and _layer(t) not in FLOOR[_layer(m)]
    )
    assert leaks == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_cycle_between_files(graph):
    assert _cycles(graph) == []


def test_no_cycle_between_packages(graph):
    packages: dict[str, set[str]] = {}
    for m, targets in graph.items():
        packages.setdefault(_layer(m), set()).update(_layer(t) for t in targets if _layer(t) != _layer(m))
    assert _cycles(packages) == []


def test_no_command_imports_another_command(graph):
    """cli/ holds one module per command plus the app and the shared options; shared code lives below."""
    shared = {"surrobench.cli", "surrobench.cli.app", "surrobench.cli.options"}
    crossing = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith("surrobench.cli.") and m not in shared
        for t in targets
        if t.startswith("surrobench.cli.") and t not in shared
    )
    assert crossing == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: What the CLI imports: itself, the library's verbs, the renderers, the records, the errors and the version.
CLI_IMPORTS = {"cli", "api", "report", "records", "errors", "version"}
#: The process edge, named: at exit the CLI leaves TorchInductor's worker threads out of the threads it reports
#: as the model's (:func:`surrobench.cli.stray_threads`).
CLI_EDGE = {("surrobench.cli", "surrobench.execution.modes")}


def _below_the_verbs(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if _layer(m) == "cli"
        for t in targets
        if _layer(t) not in CLI_IMPORTS and (m, t) not in CLI_EDGE
    )


def test_the_cli_imports_only_the_verbs_records_and_renderers(graph):
    assert _below_the_verbs(graph) == []


def test_the_cli_rule_sees_an_import_of_results():
    tree = {"surrobench.cli.run": {"surrobench.results.store", "surrobench.api.benchmark"}}
    assert _below_the_verbs(tree) == ["surrobench.cli.run -> surrobench.results.store"]
