"""Running OpenClaw 2026.9.6's own code under Node 24, to compare clawlane's tools with it.

`openclaw_exports` finds the module of the installed `openclaw` package's dist that exports a
function (dist modules are hashed bundles; each names its exports with a letter) and skips the
test without Node 24 or the package (`bash ../shared/openclaw-peer/peer.sh install`).
`run_node` runs a script and decodes the JSON it prints; `run_node_in` runs one in a directory
where the package's own modules resolve as its dist does. `digest_strings` is how recorded
answers keep long strings small."""

from __future__ import annotations

import hashlib
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


async def run_node_in(workdir: Path, name: str, source: str, *, timeout_s: float) -> Any:
    """Run `source` as `workdir/name` under Node with `HOME` at `workdir` (no OpenClaw config
    there: its defaults) and the modules the dist loads resolving as they do in the package
    (its own node_modules, then the one it is installed in); what it printed, as JSON."""
    (workdir / "dist").mkdir(exist_ok=True)
    for link, target in (
        (workdir / "dist/node_modules", PACKAGE / "node_modules"),
        (workdir / "node_modules", PACKAGE.parent),
    ):
        if not link.exists():
            link.symlink_to(target)
    script = workdir / name
    await trio.Path(script).write_text(source)
    with trio.fail_after(timeout_s):
        ran = await trio.run_process(
            [str(NODE), str(script)],
            capture_stdout=True,
            env={"HOME": str(workdir), "PATH": "/usr/bin:/bin"},
        )
    return json.loads(ran.stdout)


def digest_strings(value: Any, longest: int) -> Any:
    """`value` with each string longer than `longest` UTF-16 units as `{sha256, length}` of
    its UTF-8 bytes (lists and objects walked), as recorded answers keep them."""
    if isinstance(value, str):
        length = len(value.encode("utf-16-le", "surrogatepass")) // 2
        if length <= longest:
            return value
        data = value.encode("utf-8", "surrogatepass")
        return {"sha256": hashlib.sha256(data).hexdigest(), "length": length}
    if isinstance(value, list):
        return [digest_strings(v, longest) for v in value]
    if isinstance(value, dict):
        return {k: digest_strings(v, longest) for k, v in value.items()}
    return value
