"""Random calls of the `write` and `read` tools, and what OpenClaw 2026.9.6's own tools answer
for them under Node 24.

A case is `{tool, files, dirs, args, contentParts?, contextWindow?}`: the workspace's files
before the call (`files`: name to a list of `[base64 piece, repeat]`, so that megabyte files
stay small here), its directories, the tool's arguments (`<root>` in a path stands for the
workspace), for `write` the content as `[text piece, repeat]` pairs when large, and for
`read` the model's context window (tokens; None: unknown). `openclaw_answers` runs OpenClaw's
`write` (createHostWorkspaceWriteTool, workspace-only, as its gateway makes it) and `read`
(createOpenClawReadTool over createReadTool with the adaptive page size and the model budget
of the context window, as its gateway makes it) on a fresh directory per case: the answer is
`{content, details}` (an image block as `{type: image, mimeType, bytes}`) or `{error}` (what
it threw, which its agent loop turns into the error result's text), and for `write` the
SHA-256 of the file's bytes after (`afterSha256`, null: no file). The workspace's path reads `<root>` in answers,
and strings longer than `LONG` are recorded as their SHA-256 (`digest_long`).

Regenerate the recorded table (`tests/data/openclaw-file-tools-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.tools._file_tool_cases` (Node 24 and the package needed)."""

from __future__ import annotations

import base64
import json
import random
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import trio

from tests.runtime.tools._openclaw_node import NODE, PACKAGE, digest_strings, run_node

DATA = Path(__file__).parents[2] / "data"
RECORD = DATA / "openclaw-file-tools-2026.9.6.json"

_SCRIPT = r"""
import fs from "node:fs/promises";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";
console.log = console.info = console.warn = console.error;  // stdout carries the answers
const [toolsModule, readModule, limitsModule, casesFile, LONG] = %s;
const tools = await import(toolsModule.path);
const ar = await import(readModule.path);
const lim = await import(limitsModule.path);
const createReadTool = tools[toolsModule.createReadTool];
const createOpenClawReadTool = ar[readModule.createOpenClawReadTool];
const resolveAdaptiveReadMaxBytes = ar[readModule.resolveAdaptiveReadMaxBytes];
const createHostWorkspaceWriteTool = ar[readModule.createHostWorkspaceWriteTool];
const resolveToolResultBudget = lim[limitsModule.resolveToolResultBudget];
const digestLong = (v) => typeof v === "string" && v.length > LONG
  ? { sha256: createHash("sha256").update(v, "utf8").digest("hex"), length: v.length }
  : Array.isArray(v) ? v.map(digestLong)
  : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, digestLong(x)]))
  : v;
const cases = JSON.parse(readFileSync(casesFile, "utf8"));
const bytes = (parts) => Buffer.concat(parts.flatMap(([b64, n]) => Array(n).fill(Buffer.from(b64, "base64"))));
const out = [];
for (const c of cases) {
  const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "ocft-")));
  for (const d of c.dirs ?? []) await fs.mkdir(path.join(root, d), { recursive: true });
  for (const [name, parts] of Object.entries(c.files ?? {})) {
    await fs.mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await fs.writeFile(path.join(root, name), bytes(parts));
  }
  const args = JSON.parse(JSON.stringify(c.args).replaceAll("<root>", root));
  if (c.contentParts) args.content = c.contentParts.map(([s, n]) => s.repeat(n)).join("");
  let tool;
  if (c.tool === "write") tool = createHostWorkspaceWriteTool(root, { workspaceOnly: true });
  else {
    const opts = { modelContextWindowTokens: c.contextWindow ?? undefined };
    tool = createOpenClawReadTool(createReadTool(root, {
      maxBytes: resolveAdaptiveReadMaxBytes(opts),
      modelBudget: resolveToolResultBudget(opts.modelContextWindowTokens),
    }), { ...opts, cwd: root });
  }
  const rec = {};
  try {
    const r = await tool.execute("call", args, undefined, undefined);
    rec.content = r.content.map((b) => b.type === "text" ? { type: "text", text: b.text }
      : { type: b.type, mimeType: b.mimeType, bytes: Buffer.from(b.data, "base64").length });
    rec.details = r.details ?? null;
  } catch (e) {
    rec.error = String(e?.message ?? e);
  }
  if (c.tool === "write") {
    try {
      const after = await fs.readFile(path.resolve(root, args.path));
      rec.afterSha256 = createHash("sha256").update(after).digest("hex");
    } catch { rec.afterSha256 = null; }
  }
  out.push(digestLong(JSON.parse(JSON.stringify(rec).replaceAll(root, "<root>"))));
  await fs.rm(root, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
"""


def _module(pattern: str, **exports: str) -> dict[str, str]:
    """The dist module matching `pattern` exporting each of `exports` (its names there)."""
    import re

    for module in sorted((PACKAGE / "dist").glob(pattern)):
        text = module.read_text()
        found = {key: re.search(rf"\b{key} as (\w+)", text) for key in exports}
        if all(found.values()):
            return {"path": str(module)} | {k: m.group(1) for k, m in found.items() if m}
    raise LookupError(f"no module {pattern} exporting {list(exports)}")


async def openclaw_answers(workdir: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = workdir / "file-tool-cases.json"
    data.write_text(json.dumps(cases))
    modules = [
        _module("tools-*.mjs", createReadTool=""),
        _module(
            "agent-tools.read-*.mjs",
            createOpenClawReadTool="",
            resolveAdaptiveReadMaxBytes="",
            createHostWorkspaceWriteTool="",
        ),
        _module("tool-result-limits-*.mjs", resolveToolResultBudget=""),
        str(data),
        LONG,
    ]
    answers: list[dict[str, Any]] = await run_node(
        workdir / "file-tools.mjs", _SCRIPT % json.dumps(modules)
    )
    return answers


LONG = 4000
"""Strings longer (UTF-16 units) are recorded as `{sha256, length}` of their UTF-8 bytes."""


def digest_long(value: Any) -> Any:
    """`value` with its long strings as `{sha256, length}`, as answers are recorded."""
    return digest_strings(value, LONG)


# --- drawing cases -----------------------------------------------------------------------------

_WORDS = ["alpha", "beta", "x", "", "  indented", "\ttab", "é", "日本語", "😀", "e\u0301", "}"]
_ODD = ["\r", "\ufeff", "\u2028", "\x00", "\ufffd"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def file_bytes(parts: list[list[Any]]) -> bytes:
    return b"".join(base64.b64decode(piece) * count for piece, count in parts)


def _line(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.05:
        words.append(rng.choice(_ODD))
    return " ".join(words)


def _text(rng: random.Random, lines: int) -> str:
    eol = rng.choice(["\n", "\n", "\r\n", "mixed"])
    out = []
    for _ in range(lines):
        out.append(_line(rng) + (rng.choice(["\n", "\r\n"]) if eol == "mixed" else eol))
    text = "".join(out)
    if text and rng.random() < 0.3:
        text = text.rstrip("\r\n")
    if rng.random() < 0.05:
        text = "\ufeff" + text
    return text


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(0, 6)):
        at = rng.randint(0, len(lines))
        what = rng.random()
        if what < 0.35:
            lines.insert(at, _line(rng) + "\n")
        elif what < 0.7 and lines:
            del lines[min(at, len(lines) - 1)]
        elif lines:
            lines[min(at, len(lines) - 1)] = _line(rng) + rng.choice(["\n", "\r\n", ""])
    return "".join(lines)


_PATHS = ["a.txt", "sub/dir/f.txt", "./x.txt", "name with space.txt", "ünï.md", "<root>/abs.txt"]


def _write_case(rng: random.Random) -> dict[str, Any]:
    path = rng.choice(_PATHS)
    name = path.removeprefix("<root>/").removeprefix("./")
    kind = rng.random()
    case: dict[str, Any] = {"tool": "write", "files": {}, "dirs": []}
    before: bytes | None = None
    if kind < 0.2:
        content = _text(rng, rng.randint(0, 30))
    elif kind < 0.75:
        old = _text(rng, rng.randint(0, 40))
        before = old.encode("utf-8")
        content = old if rng.random() < 0.1 else _mutate(rng, old)
    elif kind < 0.85:  # not text: invalid UTF-8 or NUL
        old = _text(rng, rng.randint(1, 10))
        bad = rng.choice([b"\xff\xfe", b"\x00", b"\xc3", b"\xed\xa0\x80"])
        cut = rng.randint(0, len(old.encode()))
        before = old.encode()[:cut] + bad + old.encode()[cut:]
        content = _mutate(rng, old)
    else:  # the same size, other bytes
        old = _text(rng, rng.randint(1, 10)) or "z"
        before = old.encode("utf-8")
        content = old[::-1] if rng.random() < 0.5 else old.swapcase()
    if before is not None:
        case["files"][name] = [[_b64(before), 1]]
    case["args"] = {"path": path, "content": content}
    return case


def _big_write_cases() -> list[dict[str, Any]]:
    """Sizes around OpenClaw's limits: 1 MiB of content or of both texts together, 20 000
    line breaks, 2 000 changed lines."""
    cases: list[dict[str, Any]] = []
    mib = 1024 * 1024
    for size in (mib - 1, mib, mib + 1):
        for existed in (False, True):
            case: dict[str, Any] = {"tool": "write", "files": {}, "dirs": [], "args": {}}
            case["args"] = {"path": "big.txt"}
            case["contentParts"] = [["y" * 1023 + "\n", size // 1024], ["z", size % 1024]]
            if existed:
                case["files"]["big.txt"] = [[_b64(b"old\n"), 1]]
            cases.append(case)
    for old_size, new_size in ((mib // 2, mib // 2), (mib // 2, mib // 2 + 1), (mib + 5, 10)):
        cases.append(
            {
                "tool": "write",
                "dirs": [],
                "files": {"f.txt": [[_b64(b"q" * 1023 + b"\n"), old_size // 1024]]},
                "args": {"path": "f.txt"},
                "contentParts": [["r" * 1023 + "\n", new_size // 1024], ["s", new_size % 1024]],
            }
        )
    for breaks in (19_999, 20_000, 20_001):
        cases.append(
            {
                "tool": "write",
                "files": {},
                "dirs": [],
                "args": {"path": "lines.txt"},
                "contentParts": [["l\n", breaks]],
            }
        )
        half = breaks // 2
        cases.append(
            {
                "tool": "write",
                "files": {"lines.txt": [[_b64(b"o\n"), half]]},
                "dirs": [],
                "args": {"path": "lines.txt"},
                "contentParts": [["o\n", half], ["n\n", breaks - 2 * half]],
            }
        )
    for changed in (1000, 1001, 1999, 2000, 2001):
        cases.append(
            {
                "tool": "write",
                "files": {"c.txt": [[_b64(b"a\n"), changed]]},
                "dirs": [],
                "args": {"path": "c.txt"},
                "contentParts": [["b\n", changed]],
            }
        )
    return cases


def _fixed_write_cases() -> list[dict[str, Any]]:
    """A directory, a file where a directory should be, a blank path, a trailing slash."""
    blocked = {"f": [[_b64(b"a file"), 1]]}
    paths = ["d", "f/x.txt", "", "  ", "a/", "d/new.txt"]
    return [
        {"tool": "write", "files": blocked, "dirs": ["d"], "args": {"path": p, "content": "x"}}
        for p in paths
    ]


def random_write_cases(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = [_write_case(rng) for _ in range(count)]
    return cases + _big_write_cases() + _fixed_write_cases()


_UNITS = ["a", "é", "日本", "😀", "\t", " ", "\r", "\x00", "\ufffd", "e\u0301", "𠀀"]


def _read_file(rng: random.Random) -> list[list[Any]]:
    """A file for `read`: small or around the page limits (32 KB to 128 KB, 50 KB, 2 000
    lines), lines short or one long, CRLF, a BOM, blank lines, invalid UTF-8."""
    shape = rng.random()
    if shape < 0.08:
        return [[_b64(rng.choice([b"", b"\xef\xbb\xbf", b"\n\n", b"\r\n", b"\n", b" "])), 1]]
    if shape < 0.45:
        raw = _text(rng, rng.randint(1, 60)).encode("utf-8")
        if rng.random() < 0.1:
            cut = rng.randint(0, len(raw))
            raw = raw[:cut] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + raw[cut:]
        return [[_b64(raw), 1]]
    if shape < 0.7:  # many lines: one unit repeated
        unit = "".join(rng.choice(_UNITS) for _ in range(rng.randint(1, 40)))
        eol = rng.choice(["\n", "\r\n", "\n\n"])
        lines = rng.choice(
            [rng.randint(100, 1000), rng.randint(1990, 2010), rng.randint(2000, 9000)]
        )
        tail = rng.choice(["", "end", "\n"])
        return [[_b64((unit + eol).encode()), lines], [_b64(tail.encode()), 1]]
    # one long line (with a unit that may be a surrogate pair), then a few short ones
    unit = "".join(rng.choice(_UNITS) for _ in range(rng.randint(1, 6)))
    size = rng.choice([rng.randint(10_000, 40_000), rng.randint(40_000, 140_000)])
    count = max(1, size // len(unit.encode()))
    first = [[_b64(rng.choice(["", "x", "😀"]).encode()), 1], [_b64(unit.encode()), count]]
    return [*first, [_b64(b"\nshort line\nlast"), rng.randint(0, 3)]]


def _read_case(rng: random.Random) -> dict[str, Any]:
    parts = _read_file(rng)
    data = file_bytes(parts)
    text = data.decode("utf-8", "replace").removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    args: dict[str, Any] = {"path": "f.txt"}
    if rng.random() < 0.5:
        args["offset"] = rng.choice([1, 2, max(1, lines), lines + 1, rng.randint(1, lines + 2)])
    if rng.random() < 0.4:
        args["limit"] = rng.choice([1, 2, 10, 500, 2000, 3000, 0.5, -4, 1.7, rng.randint(1, 99)])
    if rng.random() < 0.3:
        args["cursor"] = rng.choice([0, 1, 2, 3, rng.randint(0, 200), rng.randint(0, 60_000)])
    window = rng.choice([None, None, 2_000, 16_000, 64_000, 128_000, 200_000, 1_000_000])
    return {
        "tool": "read",
        "files": {"f.txt": parts},
        "dirs": [],
        "args": args,
        "contextWindow": window,
    }


def _fixed_read_cases() -> list[dict[str, Any]]:
    """Missing files (with near names to suggest), a directory, the optional answer."""
    near = {name: [[_b64(b"x"), 1]] for name in ("file.txt", "File.md", "fil.txt", "other")}
    missing = [
        {"path": "fille.txt"},
        {"path": "nope/deeper.txt"},
        {"path": "gone.txt", "optional": True},
        {"path": "memory/2026-01-02.md"},
        {"path": "./memory/2026-01-02.md"},
        {"path": "memory/notes.md"},
        {"path": "sub"},
        {"path": "<root>/sub"},
    ]
    cases = [
        {"tool": "read", "files": near, "dirs": ["sub"], "args": args, "contextWindow": None}
        for args in missing
    ]
    spelled = {
        "my\u00a0file.txt": "my file.txt",  # a no-break space asked, a space on disk
        "it's.txt": "it\u2019s.txt",
        "it\u2018s.md": "it's.md",
        "cafe\u0301.txt": "caf\u00e9.txt",  # NFD asked, NFC on disk
        "caf\u00e9.md": "cafe\u0301.md",
        "Shot 9.41.03 PM.png": "Shot 9.41.03\u202fPM.png",
    }
    for asked, on_disk in spelled.items():
        files = {on_disk: [[_b64(b"line one\nline two\n"), 1]]}
        cases.append({"tool": "read", "files": files, "dirs": [], "args": {"path": asked}})
    both = {"a\u2019b.txt": [[_b64(b"x"), 1]], "a'b.txt": [[_b64(b"y"), 1]]}
    cases.append({"tool": "read", "files": both, "dirs": [], "args": {"path": "a\u2018b.txt"}})
    cases.append({"tool": "read", "files": {}, "dirs": ["it\u2019s"], "args": {"path": "it's"}})
    long = {"x y.txt": [[_b64(b"0123456789" * 50 + b"\n"), 200]]}
    for window in (None, 2_000):
        spaced = {"path": "x\u00a0y.txt"}
        cases.append(
            {"tool": "read", "files": long, "dirs": [], "args": spaced, "contextWindow": window}
        )
    blocked = {"f": [[_b64(b"a file"), 1]]}
    blocked_args: tuple[dict[str, Any], ...] = (
        {"path": "f/x.txt"},
        {"path": "f/x.txt", "optional": True},
        {"path": ""},
        {"path": "  ", "offset": 2, "optional": True},
    )
    for args in blocked_args:
        cases.append({"tool": "read", "files": blocked, "dirs": [], "args": args})
    for name, data in _images().items():
        files = {name: [[_b64(data), 1]]}
        cases.append({"tool": "read", "files": files, "dirs": [], "args": {"path": name}})
    return cases


def png(width: int, height: int, *, animated: bool = False) -> bytes:
    """A real PNG of one colour (`animated`: with an APNG acTL chunk)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body).to_bytes(4, "big")
        return len(body).to_bytes(4, "big") + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\0" + b"\xff\x80\x00" * width for _ in range(height))
    extra = chunk(b"acTL", struct.pack(">II", 1, 0)) if animated else b""
    body = chunk(b"IHDR", header) + extra + chunk(b"IDAT", zlib.compress(rows))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def _images() -> dict[str, bytes]:
    """Images OpenClaw sends unchanged (small PNG and GIF) and files it reads as text though
    they start like one (an animated PNG, JPEG-LS, a PNG signature alone, "BM" text)."""
    gif = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="
    return {
        "dot.png": png(1, 1),
        "wide.png": png(40, 3),
        "dot.gif": base64.b64decode(gif),
        "moving.png": png(2, 2, animated=True),
        "ls.jpg": b"\xff\xd8\xff\xf7 not a jpeg",
        "sig.png": b"\x89PNG\r\n\x1a\nhello",
        "bm.txt": b"BM is a text file, not a bitmap header at all\n",
    }


def random_read_cases(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [_read_case(rng) for _ in range(count)] + _fixed_read_cases()


def content_of(case: dict[str, Any]) -> str:
    """The `content` argument of a `write` case."""
    if "contentParts" in case:
        return "".join(piece * count for piece, count in case["contentParts"])
    content: str = case["args"]["content"]
    return content


async def _record() -> None:
    if not NODE.exists():
        sys.exit(f"Node 24 not found at {NODE}")
    cases = random_write_cases(RECORD_SEED, RECORD_WRITES)
    cases += random_read_cases(RECORD_SEED, RECORD_READS)
    with trio.fail_after(600):
        workdir = Path(await trio.to_thread.run_sync(_tmpdir))
        answers = await openclaw_answers(workdir, cases)
    body = {
        "source": (
            "OpenClaw 2026.9.6 (npm openclaw@2026.9.6): each case's answer is what its write "
            "tool (createHostWorkspaceWriteTool, workspace-only) and read tool (the gateway's "
            "createOpenClawReadTool over createReadTool) did on a fresh directory, run under "
            "Node 24 by tests/runtime/tools/_file_tool_cases.py."
        ),
        "cases": [{**case, "answer": answer} for case, answer in zip(cases, answers, strict=True)],
    }
    RECORD.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {RECORD}")


def _tmpdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="file-tools-record-")


RECORD_SEED, RECORD_WRITES, RECORD_READS = 2026_09_06, 400, 600
"""How the recorded cases were drawn."""

if __name__ == "__main__":
    trio.run(_record)
