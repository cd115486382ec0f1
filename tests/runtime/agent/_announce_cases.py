"""Subagent ends as clawlane records them, and the announce OpenClaw 2026.9.6 renders for the
same end under Node 24.

Each case of `CASES` names one child end twice: `record` as clawlane keeps it (the run's
status, abort reason, error, final payloads, usage, times and session id; the spawn's label
and task; the parent's key; `private` for `completionTarget: "parent"`) and `openclaw` as
OpenClaw's announce flow has it (`outcome`, the child's reply, `requesterIsSubagent`,
`expectsCompletionMessage`, `completionTarget`, the child session entry's token counts and
the run's times). `openclaw_announces` runs OpenClaw's own code on the `openclaw` side: its
`formatAgentInternalEventsForPrompt` of the `task_completion` event `runSubagentAnnounceFlow`
builds, with the status label, task label, findings, reply instruction
(`buildAnnounceReplyInstruction`) and stats line (`buildCompactAnnounceStatsLine`, its
session-store read replaced by the case's entry) taken from the source of OpenClaw's dist
module, and the announce's idempotency key (`buildAnnounceIdempotencyKey` of
`buildAnnounceIdFromChildRun`).

Regenerate the recorded table (`tests/data/openclaw-subagent-announce-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.agent._announce_cases` (Node 24 and the package needed)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from tests.runtime.tools._openclaw_node import NODE, PACKAGE, imports, openclaw_exports, run_node

RECORD = Path(__file__).parents[2] / "data" / "openclaw-subagent-announce-2026.9.6.json"
MAIN = "agent:main:main"
CHILD = "agent:main:subagent:7f3c"
NESTED_PARENT = "agent:main:subagent:aa01"
CRON = "agent:main:cron:nightly"
T0 = 1_765_000_000_000


def _case(
    name: str,
    *,
    status: str = "ok",
    abort_reason: str | None = None,
    error: str | None = None,
    reply: str | None = "All 12 files checked; 2 typos fixed.",
    error_payload: str | None = None,
    outcome: dict[str, Any] | None = None,
    label: str | None = "typo sweep",
    task: str = "Check the docs for typos",
    parent: str = MAIN,
    private: bool = False,
    tokens: tuple[int, int] | None = (1234, 56),
    runtime_ms: int = 83_400,
    session_id: str = "5d1e0c9a-1111-4a2b-9c3d-000000000001",
) -> dict[str, Any]:
    payloads: list[dict[str, Any]] = [{"text": reply}] if reply is not None else []
    if error_payload is not None:
        payloads.append({"text": error_payload, "isError": True})
    usage = {"input": tokens[0], "output": tokens[1]} if tokens else {"input": 0, "output": 0}
    openclaw_reply = None if status == "error" or reply == "NO_REPLY" else reply
    return {
        "name": name,
        "record": {
            "runId": f"run-{name}",
            "sessionId": session_id,
            "status": status,
            "abortReason": abort_reason,
            "error": error,
            "startedAt": T0,
            "endedAt": T0 + runtime_ms,
            "payloads": payloads,
            "usage": {**usage, "cacheRead": 0, "cacheWrite": 0, "total": sum(usage.values())},
            "childKey": CHILD,
            "label": label,
            "task": task,
            "parentKey": parent,
            "private": private,
        },
        "openclaw": {
            "childSessionKey": CHILD,
            "childRunId": f"run-{name}",
            "childSessionId": session_id,
            "label": label or "",
            "task": task,
            "outcome": outcome or {"status": "ok"},
            "reply": openclaw_reply,
            "requesterIsSubagent": parent != MAIN,
            "expectsCompletionMessage": True,
            "completionTarget": "parent" if private else None,
            "startedAt": T0,
            "endedAt": T0 + runtime_ms,
            "entry": {"inputTokens": tokens[0], "outputTokens": tokens[1]} if tokens else {},
        },
    }


CASES: list[dict[str, Any]] = [
    _case("ok"),
    _case("ok-no-label", label=None),
    _case("ok-no-label-no-task", label=None, task=""),
    _case("ok-empty", reply=None),
    _case("ok-silent", reply="NO_REPLY"),
    _case(
        "ok-multiline", reply="Line one\r\n\tLine <two>\n\n  <<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
    ),
    _case("ok-label-lines", label="two\nlines  ", task="ignored"),
    _case("ok-big", tokens=(1_234_567, 20_480), runtime_ms=3_725_600),
    _case("ok-short", tokens=(999, 0), runtime_ms=640),
    _case("ok-tokens-unknown", tokens=None),
    _case("ok-days", runtime_ms=2 * 86_400_000 + 3_600_000 * 5 + 7_000),
    _case(
        "error",
        status="error",
        error="provider overloaded (529)",
        reply="partial",
        error_payload="⚠️ provider overloaded (529)",
        outcome={"status": "error", "error": "provider overloaded (529)"},
    ),
    _case(
        "error-no-message",
        status="error",
        reply=None,
        outcome={"status": "error"},
    ),
    _case(
        "error-long",
        status="error",
        error="boom " * 130,
        reply=None,
        outcome={"status": "error", "error": "boom " * 130},
    ),
    _case(
        "timeout",
        status="aborted",
        abort_reason="timeout",
        reply="halfway there",
        outcome={"status": "timeout"},
    ),
    _case(
        "timeout-empty",
        status="aborted",
        abort_reason="timeout",
        reply=None,
        label=None,
        outcome={"status": "timeout"},
    ),
    _case(
        "aborted",
        status="aborted",
        abort_reason="rpc",
        reply=None,
        outcome={"status": "error", "error": "subagent run terminated"},
    ),
    _case(
        "aborted-shutdown",
        status="aborted",
        abort_reason="shutdown",
        reply="was working",
        outcome={"status": "error", "error": "subagent run terminated"},
    ),
    _case("requester-subagent", parent=NESTED_PARENT),
    _case("requester-cron", parent=CRON),
    _case(
        "requester-subagent-error",
        parent=NESTED_PARENT,
        status="error",
        error="tool loop",
        reply=None,
        outcome={"status": "error", "error": "tool loop"},
    ),
    _case("private", private=True),
    _case("private-requester-subagent", private=True, parent=NESTED_PARENT),
    _case(
        "private-timeout",
        private=True,
        status="aborted",
        abort_reason="timeout",
        reply=None,
        outcome={"status": "timeout"},
    ),
]


SCRIPT = """\
import { readFileSync } from "node:fs";
__IMPORTS__
const cases = JSON.parse(readFileSync(process.argv[2] ?? __CASES__, "utf8"));
const source = readFileSync(__ANNOUNCE__, "utf8");
const output = readFileSync(__OUTPUT__, "utf8");
function slice(text, from, to) {
  const start = text.indexOf(from);
  const end = text.indexOf(to, start);
  if (start < 0 || end < 0) throw new Error(`not found: ${from}`);
  return text.slice(start, end + to.length);
}
const replyInstructionSource = slice(
  source, "function buildAnnounceReplyInstruction(params) {", "\\n}"
);
const buildAnnounceReplyInstruction = new Function(
  "SUBAGENT_PRIVATE_COMPLETION_INSTRUCTION", "SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION",
  "SILENT_REPLY_TOKEN", `${replyInstructionSource}; return buildAnnounceReplyInstruction;`
)(SUBAGENT_PRIVATE_COMPLETION_INSTRUCTION, SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION,
  SILENT_REPLY_TOKEN);
const labels = new Function(
  "outcome", "params", "reply",
  `${slice(source, "const statusLabel =", "\\n")}
   ${slice(source, "const taskLabel =", "\\n")}
   ${slice(source, "const childResultText =", "\\n")}
   ${slice(source, "const findings =", "\\n")}
   return { statusLabel, taskLabel, childResultText, findings };`
);
const formatTokenCountSource = slice(output, "function formatTokenCount(value) {", "\\n}");
const statsBody = slice(output, "const input = entry?.inputTokens;", "join(\\" • \\")}`;");
const statsLine = new Function(
  "entry", "params", "formatDurationCompact", "formatCompactTokenCount",
  "resolveFreshSessionTotalTokens",
  `${formatTokenCountSource}\\n${statsBody}`
);
const answers = cases.map((c) => {
  const p = c.openclaw;
  const { statusLabel, taskLabel, childResultText, findings } = labels(p.outcome, p, p.reply);
  const requesterIsSubagent = p.requesterIsSubagent;
  const replyInstruction = buildAnnounceReplyInstruction({
    requesterIsSubagent,
    announceType: "subagent task",
    expectsCompletionMessage: p.expectsCompletionMessage,
    completionTarget: p.completionTarget ?? undefined,
    modelRouteChange: undefined,
    preserveModelRouteNotice: true,
  });
  const stats = p.completionTarget === "parent" ? undefined : statsLine(
    p.entry, p, formatDurationCompact, formatCompactTokenCount, resolveFreshSessionTotalTokens
  );
  const event = {
    type: "task_completion",
    source: "subagent",
    childSessionKey: p.childSessionKey,
    childSessionId: p.childSessionId,
    announceType: "subagent task",
    taskLabel,
    status: p.outcome.status,
    statusLabel,
    result: findings,
    ...childResultText ? {} : { noVisibleResult: true },
    modelRouteChange: undefined,
    statsLine: stats,
    replyInstruction,
  };
  const announceId = buildAnnounceIdFromChildRun({
    childSessionKey: p.childSessionKey, childRunId: p.childRunId,
  });
  return {
    message: formatAgentInternalEventsForPrompt([event]),
    idempotencyKey: buildAnnounceIdempotencyKey(announceId),
  };
});
process.stdout.write(JSON.stringify(answers));
"""

EXPORTS = (
    ("internal-events-*.mjs", "formatAgentInternalEventsForPrompt"),
    ("subagent-completion-delivery-*.mjs", "SUBAGENT_COMPLETION_OUTCOME_INSTRUCTION"),
    ("subagent-completion-delivery-*.mjs", "SUBAGENT_PRIVATE_COMPLETION_INSTRUCTION"),
    ("tokens-*.mjs", "SILENT_REPLY_TOKEN"),
    ("subagent-completion-admission.store-*.mjs", "buildAnnounceIdempotencyKey"),
    ("subagent-completion-admission.store-*.mjs", "buildAnnounceIdFromChildRun"),
    ("format-duration-*.mjs", "formatDurationCompact"),
    ("format-*.mjs", "formatCompactTokenCount"),
    ("types-*.mjs", "resolveFreshSessionTotalTokens"),
)


def _module_with(pattern: str, text: str) -> Path:
    for module in sorted((PACKAGE / "dist").glob(pattern)):
        if text in module.read_text():
            return module
    raise FileNotFoundError(f"no {pattern} with {text!r}")


async def openclaw_announces(workdir: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenClaw's announce message and idempotency key for each case's `openclaw` side."""
    found = openclaw_exports(*EXPORTS)
    announce = _module_with("subagent-announce-*.mjs", "function buildAnnounceReplyInstruction")
    output = _module_with("subagent-announce-output-*.mjs", "function buildCompactAnnounceStats")
    data = workdir / "cases.json"
    await trio.Path(data).write_text(json.dumps(cases))
    script = (
        SCRIPT.replace("__IMPORTS__", imports(found))
        .replace("__CASES__", json.dumps(str(data)))
        .replace("__ANNOUNCE__", json.dumps(str(announce)))
        .replace("__OUTPUT__", json.dumps(str(output)))
    )
    answers: list[dict[str, Any]] = await run_node(workdir / "announce.mjs", script)
    return answers


async def _record() -> None:
    if not NODE.exists():
        sys.exit(f"Node 24 not found at {NODE}")
    with tempfile.TemporaryDirectory(prefix="announce-cases-") as tmp:
        answers = await openclaw_announces(Path(tmp), CASES)
    table = {
        "source": (
            "OpenClaw 2026.9.6 (npm openclaw@2026.9.6, dist subagent-announce-*.mjs and the "
            "functions it imports) run under Node 24 by tests/runtime/agent/_announce_cases.py: "
            "for each case, `message` is formatAgentInternalEventsForPrompt of the "
            "task_completion event runSubagentAnnounceFlow builds from the case's `openclaw` "
            "side, `idempotencyKey` its buildAnnounceIdempotencyKey; `record` is the same end "
            "as clawlane records it."
        ),
        "cases": [{**c, **a} for c, a in zip(CASES, answers, strict=True)],
    }
    RECORD.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(CASES)} cases to {RECORD}")


if __name__ == "__main__":
    trio.run(_record)
