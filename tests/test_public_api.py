"""The packages' public faces: everything in `__all__` exists, is re-exported, and the
layering holds (runtime imports neither actors nor transports; actors not transports)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "name",
    ["runtime", "runtime.llm", "runtime.tools", "runtime.plugin_sdk", "actors", "transports"],
)
def test_public_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported, f"{name} has an empty __all__"
    assert len(set(exported)) == len(exported)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is in __all__ but missing"


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
