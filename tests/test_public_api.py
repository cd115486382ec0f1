"""The packages' public faces (every package `__init__.py` of runtime, actors and transports,
and `runtime.plugin_sdk`): each has an `__all__` without duplicates whose every name exists,
and the public names a face binds are exactly its `__all__` (none exported by accident, none
listed and forgotten). Also the layering between packages: runtime imports neither actors
nor transports; actors not transports."""

from __future__ import annotations

import ast
import importlib
import typing
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("runtime", "actors", "transports")


def _faces() -> list[str]:
    found = [
        ".".join(init.parent.relative_to(ROOT).parts)
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
    ]
    return [*sorted(found), "runtime.plugin_sdk"]


FACES = _faces()


def _own_use(name: str, value: object) -> bool:
    """Bound for the face's own use, never its API: `from __future__ import annotations`, a
    module (a submodule, bound by importing it, or one it imports), or a name of `typing`
    imported under that name (`TYPE_CHECKING`, `Final`)."""
    return (
        name == "annotations"
        or isinstance(value, ModuleType)
        or getattr(typing, name, _NOTHING) is value
    )


_NOTHING = object()


def _bound_public_names(module: ModuleType) -> set[str]:
    """The names a face binds that do not start with `_` (less those `_own_use` names), plus
    the names of its `__all__` that its module `__getattr__` resolves on first use (PEP 562)."""
    names = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not _own_use(name, value)
    }
    if "__getattr__" in vars(module):
        names |= {name for name in module.__all__ if hasattr(module, name)}
    return names


def test_the_faces_are_found() -> None:
    assert {"runtime", "actors", "transports", "actors.store", "transports.websocket"} <= set(FACES)


@pytest.mark.parametrize("name", FACES)
def test_all_is_a_list_of_distinct_names_that_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert exported, f"{name} has an empty __all__"
    duplicates = sorted({n for n in exported if exported.count(n) > 1})
    assert not duplicates, f"{name}.__all__ lists {duplicates} more than once"
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert not missing, f"{name}.__all__ lists {missing}, which {name} does not have"


@pytest.mark.parametrize("name", FACES)
def test_the_public_names_a_face_binds_are_its_all(name: str) -> None:
    module = importlib.import_module(name)
    bound = _bound_public_names(module)
    exported = set(module.__all__)
    assert not bound - exported, f"{name} binds {sorted(bound - exported)}, not in __all__"
    assert not exported - bound, f"{name}.__all__ lists {sorted(exported - bound)}, not bound"


@pytest.mark.parametrize(
    ("package", "forbidden"), [("runtime", ("actors", "transports")), ("actors", ("transports",))]
)
def test_imports_point_one_way(package: str, forbidden: tuple[str, ...]) -> None:
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                assert n.split(".")[0] not in forbidden, f"{path.relative_to(ROOT)} imports {n}"
