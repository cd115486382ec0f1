"""Random `apply_patch` calls, and what OpenClaw 2026.9.6's own apply_patch answers for them
under Node 24.

A case is `{files, dirs, patch}`: the workspace's files before the call (name to base64
bytes), its directories, and the patch text (`<root>` stands for the workspace's path). The
patches add files (some over existing ones), update them (context and `@@` markers, unique or
repeated or missing lines, trailing or surrounding spaces, Unicode punctuation, `*** End of
File`), move them (to new, existing or the same paths), delete them (some missing), on files
with CRLF, lone CR, a BOM or no final line break, and some are malformed (headers, markers,
boundaries, heredoc wrappers, hunk lines).

`openclaw_answers` runs OpenClaw's tool (createApplyPatchTool as createCoreCodingTools makes it
for a gateway: workspace-only, the workspace as cwd and root) on a fresh directory per case.
The answer is `{content, details}` or `{error}` (the message it threw, which its agent loop
turns into the error result), and `after`: the SHA-256 of every file's bytes after the call,
by path relative to the workspace. The workspace's path reads `<root>` in answers, and
strings longer than `LONG` are recorded as their SHA-256 (`digest_long`).

Regenerate the recorded table (`tests/data/openclaw-apply-patch-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.tools._patch_cases` (Node 24 and the package needed)."""

from __future__ import annotations

import base64
import json
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from tests.runtime.tools._openclaw_node import NODE, PACKAGE, digest_strings, run_node

DATA = Path(__file__).parents[2] / "data"
RECORD = DATA / "openclaw-apply-patch-2026.9.6.json"
LONG = 2000
"""Strings longer (UTF-16 units) are recorded as `{sha256, length}` of their UTF-8 bytes."""

_SCRIPT = r"""
import fs from "node:fs/promises";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";
console.log = console.info = console.warn = console.error;  // stdout carries the answers
const [modulePath, exportName, casesFile, LONG] = %s;
const createCoreCodingTools = (await import(modulePath))[exportName];
const digestLong = (v) => typeof v === "string" && v.length > LONG
  ? { sha256: createHash("sha256").update(v, "utf8").digest("hex"), length: v.length }
  : Array.isArray(v) ? v.map(digestLong)
  : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, digestLong(x)]))
  : v;
async function after(root) {
  const out = {};
  for (const name of (await fs.readdir(root, { recursive: true })).sort()) {
    const full = path.join(root, name);
    if ((await fs.lstat(full)).isFile())
      out[name] = createHash("sha256").update(await fs.readFile(full)).digest("hex");
  }
  return out;
}
const cases = JSON.parse(readFileSync(casesFile, "utf8"));
const out = [];
for (const c of cases) {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "ocap-")));
  for (const d of c.dirs ?? []) await fs.mkdir(path.join(root, d), { recursive: true });
  for (const [name, b64] of Object.entries(c.files ?? {})) {
    await fs.mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await fs.writeFile(path.join(root, name), Buffer.from(b64, "base64"));
  }
  const tools = createCoreCodingTools({
    codingRoot: root, containmentRoot: root, includeBaseCodingTools: false,
    shellTools: "patch", workspaceOnly: true, applyPatchEnabled: true,
    applyPatchWorkspaceOnly: true, applyPatchContainmentSource: "config",
  });
  const tool = tools.find((t) => t.name === "apply_patch");
  const rec = {};
  try {
    const r = await tool.execute("call", { input: c.patch.replaceAll("<root>", root) }, undefined);
    rec.content = r.content;
    rec.details = r.details ?? null;
  } catch (e) {
    rec.error = String(e?.message ?? e);
  }
  rec.after = await after(root);
  out.push(digestLong(JSON.parse(JSON.stringify(rec).replaceAll(root, "<root>"))));
  await fs.rm(root, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
"""


async def openclaw_answers(workdir: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenClaw's answer for each case (see the module docstring)."""
    data = workdir / "patch-cases.json"
    data.write_text(json.dumps(cases))
    for module in sorted((PACKAGE / "dist").glob("core-coding-tools-*.mjs")):
        name = re.search(r"\bcreateCoreCodingTools as (\w+)", module.read_text())
        if name:
            break
    else:
        raise LookupError("no module exporting createCoreCodingTools")
    args = [str(module), name.group(1), str(data), LONG]
    answers: list[dict[str, Any]] = await run_node(
        workdir / "patch.mjs", _SCRIPT % json.dumps(args)
    )
    return answers


def digest_long(value: Any) -> Any:
    """`value` with its long strings as `{sha256, length}`, as answers are recorded."""
    return digest_strings(value, LONG)


# --- drawing cases -----------------------------------------------------------------------------

_WORDS = ["alpha", "beta", "x = 1", "return x", "}", "{", "", "# note", "é", "日本", "end"]
_PUNCT = {"-": "\u2013", "'": "\u2019", '"': "\u201c", " ": "\u00a0"}
_PATHS = ["a.txt", "b.md", "src/c.py", "src/d.py", "deep/er/e.txt", "f g.txt", "ü.txt"]


def _line(rng: random.Random) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    roll = rng.random()
    if roll < 0.1:
        text = "    " + text
    elif roll < 0.15:
        text += "  "
    elif roll < 0.2:
        text = rng.choice(["it's", "a - b", 'say "hi"', "a b"]) + " " + text
    return text


def _file_lines(rng: random.Random) -> list[str]:
    """A file's lines: some repeated, so that context can be ambiguous."""
    pool = [_line(rng) for _ in range(rng.randint(3, 12))]
    return [rng.choice(pool) for _ in range(rng.randint(1, 12))]


def _encode(rng: random.Random, lines: list[str]) -> bytes:
    eol = rng.choice(["\n", "\n", "\n", "\r\n", "mixed", "\r"])
    parts = [ln + (rng.choice(["\n", "\r\n"]) if eol == "mixed" else eol) for ln in lines]
    text = "".join(parts)
    if rng.random() < 0.25:
        text = text.rstrip("\r\n")
    if rng.random() < 0.05:
        text = "\ufeff" + text
    data = text.encode("utf-8")
    if rng.random() < 0.03:
        data = data[:1] + b"\xff" + data[1:]
    return data


def _lines_of(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    return [ln.rstrip("\r\n") for ln in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", text)]


def _perturb(rng: random.Random, line: str) -> str:
    """How a model may misquote a line: spaces, Unicode punctuation, or another line."""
    roll = rng.random()
    if roll < 0.04:
        return line + " \t"
    if roll < 0.07:
        return "  " + line.strip()
    if roll < 0.1:
        return "".join(_PUNCT.get(ch, ch) for ch in line)
    if roll < 0.12:
        return "missing " + line
    return line


def _hunk(rng: random.Random, lines: list[str], start: int) -> tuple[list[str], int]:
    """One `@@` hunk for `lines` at or after `start`: its patch lines and where it ends."""
    if start >= len(lines) and rng.random() < 0.7:
        return [rng.choice(["@@", "@@ nothing here"]), "+appended"], start
    at = rng.randint(start, max(start, len(lines) - 1))
    before = rng.randint(0, 2)
    removed = rng.randint(0, 2)
    after = rng.randint(0, 2)
    out: list[str] = []
    roll = rng.random()
    ctx_from = max(start, at - before)
    if roll < 0.25 and ctx_from > start:
        out.append("@@ " + _perturb(rng, lines[ctx_from - 1]))
    elif roll < 0.3:
        out.append("@@ ")
    elif roll < 0.35:
        out.append("@@ " + _line(rng))
    else:
        out.append("@@")
    for ln in lines[ctx_from:at]:
        out.append(" " + _perturb(rng, ln) if ln or rng.random() < 0.5 else "")
    for ln in lines[at : at + removed]:
        out.append("-" + _perturb(rng, ln))
    for _ in range(rng.randint(0, 2)):
        out.append("+" + _line(rng))
    end = min(len(lines), at + removed)
    for ln in lines[end : end + after]:
        out.append(" " + _perturb(rng, ln))
    end = min(len(lines), end + after)
    if rng.random() < 0.1:
        out.append(" ")  # a trailing blank context line
    if (end == len(lines) and rng.random() < 0.4) or rng.random() < 0.05:
        out.append("*** End of File")
    return out, end


def _update(rng: random.Random, path: str, data: bytes | None) -> list[str]:
    out = [f"*** Update File: {path}"]
    roll = rng.random()
    if roll < 0.12:
        out.append(f"*** Move to: {rng.choice([*_PATHS, 'moved/new.txt', 'n.txt'])}")
    elif roll < 0.15:
        out.append(f"*** Move to: {path}")
    lines = _lines_of(data) if data is not None else [_line(rng) for _ in range(3)]
    start = 0
    for n in range(rng.choice([1, 1, 1, 2, 2, 3])):
        hunk, start = _hunk(rng, lines, start)
        if n == 0 and rng.random() < 0.3 and hunk[0] == "@@":
            hunk = hunk[1:]  # the first hunk may go without its marker
        out += hunk
        if rng.random() < 0.1:
            out.append("")
    return out


def _malform(rng: random.Random, lines: list[str]) -> list[str]:
    """Break a patch the ways a model does."""
    roll = rng.random()
    at = rng.randint(1, max(1, len(lines) - 2))
    if roll < 0.15:
        return lines[1:]
    if roll < 0.25:
        return lines[:-1]
    if roll < 0.4:
        return [rng.choice(["<<EOF", "<<'EOF'", '<<"EOF"']), *lines, rng.choice(["EOF", "'EOF"])]
    if roll < 0.5:
        return [
            *lines[:at],
            rng.choice(["*** Frobnicate: a.txt", "*** Add file: x", "junk"]),
            *lines[at:],
        ]
    if roll < 0.6:
        return [*lines[:at], "*** Update File: a.txt", *lines[at:]]
    if roll < 0.7:
        return [*lines[:at], rng.choice(["@@", "@@ x", "*** End of File", "bad line"]), *lines[at:]]
    if roll < 0.8:
        return ["  " + ln if ln.startswith("***") else ln for ln in lines]
    if roll < 0.9:
        return [ln + "  " if ln.startswith("***") else ln for ln in lines]
    return [*lines[:at], "", "   ", *lines[at:]]


def _case(rng: random.Random) -> dict[str, Any]:
    files: dict[str, bytes] = {}
    for path in rng.sample(_PATHS, rng.randint(1, 4)):
        files[path] = _encode(rng, _file_lines(rng))
    body: list[str] = []
    for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
        kind = rng.random()
        if kind < 0.15:
            path = rng.choice([*_PATHS, "new/one.txt", "n.txt", "./n2.txt", "src/../n3.txt"])
            body.append(f"*** Add File: {path}")
            body += ["+" + _line(rng) for _ in range(rng.randint(0, 3))]
        elif kind < 0.25:
            path = rng.choice([*list(files), *list(files), "missing.txt", "src"])
            body.append(f"*** Delete File: {path}")
        else:
            known = rng.random() < 0.95
            path = rng.choice(list(files)) if known else rng.choice(["missing.txt", "src"])
            body += _update(rng, path, files.get(path))
    lines = ["*** Begin Patch", *body, "*** End Patch"]
    if rng.random() < 0.2:
        lines = _malform(rng, lines)
    eol = "\r\n" if rng.random() < 0.1 else "\n"
    patch = eol.join(lines)
    if rng.random() < 0.1:
        patch = rng.choice(["\n", "  ", "\ufeff", "\n\n"]) + patch + rng.choice(["\n", " \n"])
    b64 = {name: base64.b64encode(data).decode("ascii") for name, data in files.items()}
    dirs = ["src"] if rng.random() < 0.2 else []
    return {"files": b64, "dirs": dirs, "patch": patch}


def _fixed_cases() -> list[dict[str, Any]]:
    """Edges drawn cases reach rarely: empty and blank input, an empty envelope, absolute
    paths inside and outside, escapes, directories, a file in the way of a directory."""
    a = base64.b64encode(b"one\ntwo\nthree\n").decode("ascii")
    files = {"a.txt": a, "blocker": a}
    patches = [
        "",
        "   \n ",
        "*** Begin Patch\n*** End Patch",
        "*** Begin Patch",
        "*** End Patch",
        "*** Begin Patch\n\n*** End Patch",
        "<<EOF\n*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\nEOF",
        "<<EOF\n*** Begin Patch\n*** Delete File: a.txt\nEOF",
        "*** Begin Patch\n*** Add File: <root>/abs.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Update File: <root>/a.txt\n@@\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Add File: ../out.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Add File: /etc/x.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Delete File: ../a.txt\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../b.txt\n@@\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Add File: ../out.txt\n+y\n*** End Patch",
        "*** Begin Patch\n*** Update File: dir\n@@\n-x\n+y\n*** End Patch",
        "*** Begin Patch\n*** Delete File: dir\n*** End Patch",
        "*** Begin Patch\n*** Add File: dir\n+x\n*** End Patch",
        "*** Begin Patch\n*** Add File: blocker/x.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: dir\n@@\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: blocker\n@@\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ./a.txt\n@@\n two\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: sub/../a.txt\n@@\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Add File: \n+x\n*** End Patch",
        "*** Begin Patch\n*** Delete File: \n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@\n*** End of File\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n-three\n+3\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@ one\n+inserted\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@ one\n+inserted\n*** End of File\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@\n+appended\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@ one\n+x\n@@\n two\n+y\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n*** Update File: a.txt\n-1\n+one\n*** End Patch",
        "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: a.txt\n+new\n*** End Patch",
        "*** Begin Patch\n*** Add File: a.txt\n+new\n*** Delete File: a.txt\n*** End Patch",
        "*** Begin Patch\n*** Delete File: a.txt\n*** Delete File: a.txt\n*** End Patch",
        "*** Begin Patch\n*** Add File: q.txt\n+1\n*** Add File: q.txt\n+2\n*** End Patch",
        "*** Begin Patch\n*** Add File: @a.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Update File: @a.txt\n-one\n+1\n*** End Patch",
        "*** Begin Patch\n*** Add File: ~/x.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Add File: .\n+x\n*** End Patch",
        "*** Begin Patch\n*** Add File: sub/\n+x\n*** End Patch",
    ]
    patches += [
        "*** Begin Patch\n*** Update File: x\n@@\n-a\n*** Update File: y\nbad\n*** End Patch",
        "*** Begin Patch\n*** Delete File: .\n*** End Patch",
        "*** Begin Patch\n*** Update File: .\n@@\n-x\n+y\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: .\n@@\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Add File: @new.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Add File: @@new.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Delete File: d2/only.txt\n*** Delete File: d2\n*** End Patch",
        "*** Begin Patch\n*** Delete File: d2\n*** End Patch",
        "*** Begin Patch\n*** Delete File: dir\n*** Add File: dir/x.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Add File: new/deep/x.txt\n+x\n*** Add File: new\n+y\n*** End Patch",
        "*** Begin Patch\n*** Add File: n.txt\n+x\n*** Update File: n.txt\n-x\n+y\n*** End Patch",
        "*** Begin Patch\n*** Add File: n.txt\n+x\n*** Update File: n.txt\n*** Move to: m/n.txt\n-x\n+y\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n-one\n+1\n*** Update File: b.txt\n*** Move to: a.txt\n-two\n+2\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n one\n*** Update File: a.txt\n-one\n+1\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n one\n*** Update File: blocker\n two\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n*** Update File: a.txt\n-1\n+one\n*** Update File: blocker\n two\n*** End Patch",
        "\ufeff",
        "*** Begin Patch\n*** Add File: @../out.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Delete File: @a.txt\n*** End Patch",
        "\x1c*** Begin Patch\n*** Delete File: a.txt\n*** End Patch",
        "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\x85",
        "*** Begin Patch\n*** Update File: a.txt\n@@ two\n+2.5\n@@ two\n-three\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@\n+zero\n@@ one\n*** End Patch",
        "*** Begin Patch\n*** Update File: a.txt\n@@ one\n+1.5\n two\n*** End Patch",
    ]
    files["d2/only.txt"] = a
    return [{"files": files, "dirs": ["dir"], "patch": p} for p in patches]


def random_cases(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [_case(rng) for _ in range(count)] + _fixed_cases()


async def _record() -> None:
    if not NODE.exists():
        sys.exit(f"Node 24 not found at {NODE}")
    cases = random_cases(RECORD_SEED, RECORD_COUNT)
    with trio.fail_after(600):
        workdir = Path(await trio.to_thread.run_sync(tempfile.mkdtemp))
        answers = await openclaw_answers(workdir, cases)
    body = {
        "source": (
            "OpenClaw 2026.9.6 (npm openclaw@2026.9.6): each case's answer is what its "
            "apply_patch tool (createApplyPatchTool as createCoreCodingTools makes it, "
            "workspace-only) did on a fresh directory, run under Node 24 by "
            "tests/runtime/tools/_patch_cases.py."
        ),
        "cases": [{**case, "answer": answer} for case, answer in zip(cases, answers, strict=True)],
    }
    RECORD.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {RECORD}")


RECORD_SEED, RECORD_COUNT = 2026_09_06, 400
"""How the recorded cases were drawn."""

if __name__ == "__main__":
    trio.run(_record)
