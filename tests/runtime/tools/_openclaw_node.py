"""Running OpenClaw 2026.9.6's own code under Node 24, to compare clawlane's tools with it.

`openclaw_exports` finds the module of the installed `openclaw` package's dist that exports a
function (dist modules are hashed bundles; each names its exports with a letter) and skips the
test without Node 24 or the package (`bash ../shared/openclaw-peer/peer.sh install`).
`run_node` runs a script and decodes the JSON it prints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import trio

NODE = Path.home() / ".cache/node24/bin/node"
PACKAGE = Path.home() / ".cache/openclaw-peer/node_modules/openclaw"


def require_node() -> None:
    if not NODE.exists() or not (PACKAGE / "dist").is_dir():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")


def openclaw_exports(*wanted: tuple[str, str]) -> dict[str, tuple[Path, str]]:
    """For each (module glob, export name): the module of OpenClaw's dist exporting it and the
    name it is exported as. Skips without Node 24 or the package."""
    require_node()
    found: dict[str, tuple[Path, str]] = {}
    for pattern, export in wanted:
        for module in sorted((PACKAGE / "dist").glob(pattern)):
            name = re.search(rf"\b{export} as (\w+)", module.read_text())
            if name:
                found[export] = (module, name.group(1))
                break
    if len(found) < len(wanted):
        pytest.skip(f"no modules exporting {[w for _, w in wanted]}")
    return found


def imports(found: dict[str, tuple[Path, str]]) -> str:
    """ES import lines binding each export of `openclaw_exports` to its own name."""
    return "".join(
        f"import {{ {name} as {export} }} from {json.dumps(str(module))};\n"
        for export, (module, name) in found.items()
    )


async def run_node(script: Path, source: str) -> Any:
    """Run `source` (an ES module) under Node (2 minutes at most); what it printed, as JSON."""
    await trio.Path(script).write_text(source)
    with trio.fail_after(120):
        ran = await trio.run_process([str(NODE), str(script)], capture_stdout=True)
    return json.loads(ran.stdout)
