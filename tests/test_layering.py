"""The house rules a reader relies on, checked on the source tree:

- imports point one way: `transports -> actors -> runtime`, and inside each package from a
  floor (a folder) only to the floors below it (`FLOORS`: each floor and what it may
  import; every floor is listed), through the face of the floor it uses;
- code crossing packages imports from faces (`runtime`, `runtime.<floor>`, `actors`,
  `transports`), never from another package's private modules;
- no import circles between modules anywhere in the three packages (imports made only
  for type checking count too: they are dependencies all the same);
- modules stay under `MAX_MODULE_LINES` (the generated wire types aside) and functions
  under `MAX_FUNCTION_LINES`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES: Final = ("runtime", "actors", "transports")

_RUNTIME_BELOW_AGENT: Final = frozenset(
    {
        "runtime.telemetry",
        "runtime.logs",
        "runtime.llm",
        "runtime.sessions",
        "runtime.hooks",
        "runtime.tools",
        "runtime.loop",
        "runtime.model",
        "runtime.memory",
        "runtime.heartbeat",
    }
)

FLOORS: Final[dict[str, frozenset[str]]] = {
    # runtime: the domain
    "runtime.protocol": frozenset(),
    "runtime.telemetry": frozenset(),
    "runtime.logs": frozenset(),
    "runtime.llm": frozenset({"runtime.logs", "runtime.telemetry"}),
    "runtime.sessions": frozenset({"runtime.llm"}),
    "runtime.hooks": frozenset({"runtime.llm"}),
    "runtime.tools": frozenset({"runtime.llm"}),
    "runtime.loop": frozenset(
        {"runtime.telemetry", "runtime.llm", "runtime.hooks", "runtime.tools"}
    ),
    "runtime.model": frozenset(
        {
            "runtime.telemetry",
            "runtime.logs",
            "runtime.llm",
            "runtime.sessions",
            "runtime.hooks",
            "runtime.tools",
            "runtime.loop",
        }
    ),
    "runtime.agent": _RUNTIME_BELOW_AGENT | {"runtime.usage", "runtime.cron"},
    "runtime.plugin_sdk": _RUNTIME_BELOW_AGENT,
    "runtime.devices": frozenset(),
    "runtime.users": frozenset({"runtime.devices"}),
    "runtime.cron": frozenset(),
    "runtime.memory": frozenset({"runtime.tools"}),
    "runtime.heartbeat": frozenset(
        {"runtime.llm", "runtime.sessions", "runtime.tools", "runtime.model"}
    ),
    "runtime.usage": frozenset({"runtime.llm", "runtime.model"}),
    # actors: state owners
    "actors._errors": frozenset(),
    "actors._metrics": frozenset(),
    "actors.cluster": frozenset({"actors._errors"}),
    "actors.store": frozenset({"actors._errors", "actors._metrics"}),
    "actors.runs": frozenset({"actors._errors", "actors._metrics", "actors.store"}),
    "actors.approvals": frozenset({"actors._errors", "actors.runs"}),
    "actors.operator": frozenset({"actors._errors", "actors.runs", "actors.approvals"}),
    "actors.session": frozenset(
        {"actors._errors", "actors._metrics", "actors.store", "actors.runs"}
    ),
    "actors._supervisor": frozenset(
        {"actors._errors", "actors.store", "actors.runs", "actors.session"}
    ),
    "actors._admission": frozenset(
        {"actors._errors", "actors.store", "actors.runs", "actors.session", "actors._supervisor"}
    ),
    "actors._publish_files": frozenset(),
    "actors._publish_records": frozenset({"actors._errors"}),
    "actors._publisher": frozenset(
        {
            "actors._errors",
            "actors.store",
            "actors._supervisor",
            "actors._publish_files",
            "actors._publish_records",
        }
    ),
    "actors._recovery": frozenset(
        {
            "actors._errors",
            "actors.store",
            "actors.runs",
            "actors.session",
            "actors._supervisor",
            "actors._admission",
        }
    ),
    "actors._subagents": frozenset(
        {
            "actors._errors",
            "actors.store",
            "actors._recovery",
            "actors.runs",
            "actors.session",
            "actors._supervisor",
            "actors._admission",
        }
    ),
    "actors.heartbeat": frozenset(
        {"actors._errors", "actors.runs", "actors.session", "actors._supervisor"}
    ),
    "actors._session_tools": frozenset(
        {
            "actors._errors",
            "actors.runs",
            "actors._supervisor",
            "actors._subagents",
            "actors._recovery",
            "actors.heartbeat",
        }
    ),
    "actors.cron": frozenset(
        {
            "actors._errors",
            "actors.approvals",
            "actors.cluster",
            "actors.store",
            "actors.runs",
            "actors.session",
            "actors._supervisor",
            "actors._admission",
        }
    ),
    # transports: the edges
    "transports._errors": frozenset(),
    "transports.websocket": frozenset({"transports._errors"}),
    "transports.client": frozenset({"transports._errors"}),
    "transports.access": frozenset({"transports._errors"}),
    "transports.methods": frozenset({"transports.access", "transports.websocket"}),
    "transports.cluster": frozenset({"transports._errors", "transports.methods"}),
    "transports.http": frozenset(
        {"transports._errors", "transports.access", "transports.cluster", "transports.methods"}
    ),
    "transports.server": frozenset(
        {
            "transports._errors",
            "transports.websocket",
            "transports.access",
            "transports.methods",
            "transports.cluster",
            "transports.http",
        }
    ),
    "transports.loadtest": frozenset(
        {
            "transports._errors",
            "transports.websocket",
            "transports.client",
            "transports.access",
            "transports.server",
        }
    ),
    "transports.cli": frozenset(
        {
            "transports._errors",
            "transports.client",
            "transports.access",
            "transports.server",
            "transports.loadtest",
        }
    ),
}
"""Each floor of each package and the floors of the same package it may import, from the
bottom up. A floor is a folder (`runtime.llm`, `actors.store`, `transports.http`) or a module
at a package's top (`actors._supervisor`); a package's face (`actors/__init__.py`) stands on
all of them. `runtime.protocol` (wire types, frames, errors) may be imported from every floor
of every package; so may each package's `_errors`."""

MAX_MODULE_LINES: Final = 800
MAX_FUNCTION_LINES: Final = 80
GENERATED: Final = {"runtime/protocol/_wire.py"}


def _sources() -> Iterator[tuple[Path, str, str]]:
    """(path, module, package) of every source file of the three packages."""
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                module = ".".join(parts[:-1])
                yield path, module, module
            else:
                yield path, ".".join(parts), ".".join(parts[:-1])


def _imports(path: Path, package: str) -> Iterator[str]:
    """Every module `path` imports from the three packages (absolute names); `from X import
    name` also yields `X.name` when that is a module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] not in PACKAGES:
                continue
            yield target
            for alias in node.names:
                sub = Path(ROOT, *target.split("."), alias.name)
                if sub.with_suffix(".py").exists() or (sub / "__init__.py").exists():
                    yield f"{target}.{alias.name}"


def _floor(module: str) -> str:
    """The floor of a module: its folder (or top-level module) under its package; a
    package's own face is the package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path, module, package in _sources():
        graph[module] = {t for t in _imports(path, package) if t != module}
    return graph


def test_every_floor_is_listed() -> None:
    unlisted = sorted(
        {_floor(module) for _, module, _ in _sources() if _floor(module) not in PACKAGES}
        - set(FLOORS)
    )
    assert not unlisted, f"floors missing from FLOORS: {unlisted}"


def test_imports_inside_a_package_only_go_down() -> None:
    wrong = []
    for path, module, package in _sources():
        here = _floor(module)
        if here in PACKAGES:
            continue
        for target in _imports(path, package):
            there = _floor(target)
            if there.split(".")[0] != here.split(".")[0] or there in (here, "runtime.protocol"):
                continue
            if there.endswith("._errors") or there in FLOORS[here]:
                continue
            wrong.append(f"{module} ({here}) imports {target} ({there})")
    assert not wrong, "\n".join(wrong)


def test_floors_cross_through_faces() -> None:
    """In `actors` and `transports` a floor uses another floor through that floor's face:
    `..store`, not `..store._sqlite`. (`runtime`'s floors still reach into each other's
    modules where their faces are kept small and public.)"""
    wrong = []
    for path, module, package in _sources():
        here = _floor(module)
        if here.split(".")[0] == "runtime":
            continue
        for target in _imports(path, package):
            there = _floor(target)
            if (
                there != here
                and there in FLOORS
                and target != there
                and not there.split(".")[1].startswith("_")
            ):
                if target.rsplit(".", 1)[0] == there and not target.rsplit(".", 1)[1].startswith(
                    "_"
                ):
                    continue
                wrong.append(f"{module} imports {target}, not the face {there}")
    assert not wrong, "\n".join(wrong)


def test_packages_import_one_way() -> None:
    order = {"runtime": 0, "actors": 1, "transports": 2}
    wrong = [
        f"{module} imports {target}"
        for path, module, package in _sources()
        for target in _imports(path, package)
        if order[target.split(".")[0]] > order[module.split(".")[0]]
    ]
    assert not wrong, "\n".join(wrong)


def _is_face(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def test_code_crossing_packages_imports_from_faces() -> None:
    wrong = []
    for top in (*PACKAGES, "scripts"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    target = node.module
                    if (
                        target.split(".")[0] in PACKAGES
                        and target.split(".")[0] != top
                        and not _is_face(target)
                    ):
                        wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} {target}")
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles() -> None:
    graph = _graph()
    # A package's face imports its own modules: that is how a face works, not a circle.
    for module, targets in graph.items():
        graph[module] = {
            t for t in targets if not (_is_face(t) and module.startswith(t + ".") and t != module)
        }
    assert _cycles(graph) == []


def test_cycle_finder_sees_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("path", [p for p, _, _ in _sources()], ids=lambda p: str(p.name))
def test_modules_and_functions_stay_small(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    if rel in GENERATED:
        return
    text = path.read_text()
    assert text.count("\n") <= MAX_MODULE_LINES, f"{rel} has more than {MAX_MODULE_LINES} lines"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{rel}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"
