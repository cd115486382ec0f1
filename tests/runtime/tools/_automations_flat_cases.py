"""Random `automations` arguments with job fields flat beside `action` (and in shorthand), and
what OpenClaw 2026.9.6's own cron tool makes of them under Node 24.

`random_arguments(seed, count)` draws `add` / `update` arguments: recoverable fields at the
top level (padded keys, concatenated keys, every schedule and payload shorthand, JSON nulls,
numbers as strings), sometimes a `job` (empty, nested, wrapped in `data`/`job`), sometimes
arguments that are not job fields. `openclaw_jobs` runs the lines of OpenClaw's `execute`
for `add` and `update` from the arguments to the job it would normalize and send: its cron
tool module's own functions (`recoverCronObjectFromFlatParams`, `hasCronCreateSignal`,
`canonicalizeCronToolObject`, `stripCronCreateNullClears`, `assertNoCronShellExecution`,
`assertCronPacingInput`, `isEmptyRecoveredCronPatch`, with the imported
`assertCronDeliveryInputNonBlankFields` and `normalizeCronJobPatch`: the module's source loaded
with an export added, its imports made absolute; a patch `normalizeCronJobPatch` refuses is
kept, since clawlane's `cron.update` checks patches itself). The answer is the canonical job
(`add`: nulls dropped) or the error's message; a recovered patch that only the gateway's
normalization empties (a `toolBudget: null`, an empty `thinking`) is OpenClaw's `job required`
with the patch as `byNormalization` (clawlane sends it, and its `cron.update` refuses it).

Regenerate the recorded table (`tests/data/openclaw-cron-flat-args-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.tools._automations_flat_cases` (Node 24 and the package
needed)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import trio

from tests.runtime.tools._openclaw_node import NODE, PACKAGE, run_node_in

RECORD = Path(__file__).parents[2] / "data" / "openclaw-cron-flat-args-2026.9.6.json"

_AT = ["2099-01-01T09:00:00Z", "2099-03-04T05:06:07+02:00", "tomorrow", "", " "]
_MS = [
    1_900_000_000_000,
    4_102_444_800_000,
    "1900000000000",
    " 4102444800000 ",
    "0x10",
    "1e12",
    "soon",
    "",
    True,
    None,
    1.9e12 + 0.7,
    8.64e15,
    8.64e15 + 1,
    -1,
    [4102444800000],
    [],
]
_VALUES: dict[str, list[Any]] = {
    "name": ["Stand up", "", " ", None, 5],
    "declarationKey": ["daily", "", "  ", None],
    "displayName": ["Daily", "", " ", None],
    "owner": [{"agentId": "main"}, None],
    "schedule": [
        {"kind": "at", "at": "2099-01-01T09:00:00Z"},
        {"kind": "every", "everyMs": 60000},
        {"every": 60000},
        {"cron": "0 9 * * *", "tz": "UTC"},
        {"atMs": 4102444800000},
        {"atMs": "4102444800000", "kind": "cron"},
        {"expr": "0 9 * * *", "exact": True},
        {"kind": "bogus", "stagger": 5},
        {"command": ["tail", "-f", "x"]},
        {"kind": "on-exit"},
        {},
        "every 5m",
        None,
    ],
    "pacing": [None, "15m", 5],
    "trigger": [None, {"script": "return 1"}],
    "sessionTarget": ["main", "isolated", "current", "session:abc", None],
    "wakeMode": ["now", "next-heartbeat", None],
    "payload": [
        {"kind": "systemEvent", "text": "Stand up"},
        {"kind": "agentTurn", "message": "Check"},
        {"text": "Stand up"},
        {"message": "Check"},
        {"kind": "command", "argv": ["ls"]},
        {"kind": "Command"},
        {},
        {"model": None},
        "text",
        None,
    ],
    "delivery": [
        {"mode": "announce"},
        {"mode": "announce", "channel": " "},
        {"to": ""},
        {"mode": "webhook", "to": "https://example.com/h"},
        {"failureDestination": {"to": " "}},
        {"completionDestination": {"mode": "webhook", "to": ""}},
        {"channel": 5},
        None,
        [],
    ],
    "enabled": [True, False, None],
    "description": ["d", None],
    "deleteAfterRun": [True, False, None],
    "agentId": ["main", "ops", None],
    "sessionKey": ["agent:main:main", None],
    "failureAlert": [False, {"after": 2}, None],
    "namePayload": [{"kind": "systemEvent", "text": "np"}, {"message": "np"}, "x", None],
    "scheduleKind": ["at", "every", "cron", "on-exit", "stream", "bogus", {"kind": "at"}, None],
    "sessionTargetName": ["Named", "", None],
    "message": ["Check the build", "", " ", None, 7],
    "text": ["Stand up", "", None, ["a"]],
    "script": ["return 1", "", None],
    "model": ["openai/gpt-5", "", None],
    "fallbacks": [["a", "b"], [], None, ["a", 1], "a"],
    "toolsAllow": [["read"], None],
    "thinking": ["high", "", None],
    "timeoutSeconds": [30, 0, None, "30"],
    "toolBudget": [3, None],
    "lightContext": [True, False, None, "yes"],
    "allowUnsafeExternalContent": [True, None],
    "kind": [
        "at",
        "every",
        "cron",
        "stream",
        "on-exit",
        "systemEvent",
        "agentTurn",
        "script",
        "command",
        "bogus",
        None,
    ],
    "at": [*_AT, None, 5],
    "atMs": _MS,
    "every": [60000, "60000", None],
    "everyMs": [60000, None, 0],
    "anchorMs": [0, 1000, None],
    "cron": ["0 9 * * *", "", None],
    "expr": ["*/5 * * * *", None],
    "tz": ["UTC", "Asia/Shanghai", "", None],
    "stagger": [0, 1000, None],
    "staggerMs": [0, 5000, None],
    "exact": [True, False, "true", None],
    "command": [["tail", "-f"], "ls", None],
    "cwd": ["/tmp", None],
    "mode": ["line", "match", "now", None],
    "match": ["err", None],
    "batchMs": [100, None],
    "maxBatchBytes": [1000, None],
}
_OTHER: dict[str, list[Any]] = {
    "jobId": ["job-1"],
    "id": ["job-2"],
    "contextMessages": [3],
    "includeDisabled": [True],
    "unknownThing": ["x", 1],
    "gatewayUrl": ["ws://elsewhere"],
}
_PADDED = ["schedule ", " payload", "name\t", " message ", "schedule\u00a0", "bogus "]
_JOBS: list[Any] = [
    {},
    None,
    {"schedule": {"every": 60000}, "message": "nested"},
    {"data": {"cron": "0 9 * * *", "text": "in data"}},
    {"job": {"at": "2099-01-01T09:00:00Z", "message": "in job"}, "data": 5},
    {"name": "only a name"},
    {"payload": {}},
    {"displayName": " "},
    {"kind": "command"},
    {
        "schedule": {"kind": "at", "at": "2099-01-01T09:00:00Z"},
        "description": None,
        "delivery": {"to": None, "mode": "announce"},
        "agentId": None,
        "sessionKey": None,
    },
]


def random_arguments(seed: int, count: int) -> list[dict[str, Any]]:
    """`count` random `add` / `update` arguments (see the module docstring)."""
    rng = random.Random(seed)
    keys = sorted(_VALUES)
    cases: list[dict[str, Any]] = []
    for _ in range(count):
        action = rng.choice(["add", "add", "update"])
        args: dict[str, Any] = {"action": action}
        if action == "update" or rng.random() < 0.1:
            args["jobId"] = "job-1"
        for key in rng.sample(keys, rng.choice([0, 1, 1, 2, 2, 3, 4, 6])):
            args[key] = rng.choice(_VALUES[key])
        if rng.random() < 0.15:
            padded = rng.choice(_PADDED)
            args[padded] = rng.choice(_VALUES.get(padded.strip(), ["x"]))
        if rng.random() < 0.2:
            other = rng.choice(sorted(_OTHER))
            args[other] = rng.choice(_OTHER[other])
        if rng.random() < 0.3:
            args["job"] = rng.choice(_JOBS)
        keys_now = list(args)
        rng.shuffle(keys_now)
        cases.append({k: args[k] for k in ["action", *[k for k in keys_now if k != "action"]]})
    return cases


_SCRIPT = """
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dist, cronModule, normalizeModule, input, workdir] = %s;
const base = pathToFileURL(dist).href + "/";
const source = readFileSync(cronModule, "utf8")
  .replace(/((?:from|import)\\s*\\(?\\s*)"\\.\\//g, (_, head) => `${head}"${base}`)
  + "\\nexport { canonicalizeCronToolObject as __canonical, recoverCronObjectFromFlatParams as "
  + "__recover, hasCronCreateSignal as __signal, stripCronCreateNullClears as __strip, "
  + "assertNoCronShellExecution as __shell, assertCronPacingInput as __pacing, "
  + "isEmptyRecoveredCronPatch as __empty, assertCronDeliveryInputNonBlankFields as __delivery, "
  + "isMissingOrEmptyObject as __missing };\\n";
writeFileSync(`${workdir}/dist/cron.mjs`, source);
const T = await import(pathToFileURL(`${workdir}/dist/cron.mjs`).href);
const N = await import(pathToFileURL(normalizeModule).href);
function add(params) {
  if (T.__missing(params.job)) {
    const synthetic = T.__recover(params);
    if (synthetic.found && T.__signal(synthetic.value)) params.job = synthetic.value;
  }
  if (!params.job || typeof params.job !== "object") throw new Error("job required");
  const canonicalJob = T.__strip(T.__canonical(params.job));
  T.__shell(canonicalJob);
  T.__delivery(canonicalJob.delivery);
  T.__pacing(canonicalJob.pacing);
  if (typeof canonicalJob.declarationKey === "string" && canonicalJob.declarationKey.trim().length === 0) throw new Error("declarationKey must be a non-empty string");
  if (typeof canonicalJob.displayName === "string" && canonicalJob.displayName.trim().length === 0) throw new Error("displayName must be a non-empty string");
  return canonicalJob;
}
function update(params) {
  let recoveredFlatPatch = false;
  if (T.__missing(params.job)) {
    const synthetic = T.__recover(params);
    if (synthetic.found) {
      params.job = synthetic.value;
      recoveredFlatPatch = true;
    }
  }
  if (!params.job || typeof params.job !== "object") throw new Error("job required");
  const canonicalPatch = T.__canonical(params.job);
  T.__shell(canonicalPatch);
  T.__delivery(canonicalPatch.delivery);
  T.__pacing(canonicalPatch.pacing);
  if (typeof canonicalPatch.displayName === "string" && canonicalPatch.displayName.trim().length === 0) throw new Error("displayName must be a non-empty string or null");
  let patch = canonicalPatch;
  try {  // the gateway's normalization: clawlane's cron.update checks the patch itself
    patch = N.r(canonicalPatch) ?? canonicalPatch;
  } catch {}
  if (recoveredFlatPatch && T.__empty(patch)) {
    if (!T.__empty(canonicalPatch)) return { error: "job required", byNormalization: canonicalPatch };
    throw new Error("job required");
  }
  return canonicalPatch;
}
const cases = JSON.parse(readFileSync(input, "utf8"));
process.stdout.write(JSON.stringify(cases.map((args) => {
  try {
    const job = (args.action === "add" ? add : update)(structuredClone(args));
    return job.byNormalization ? job : { job };
  } catch (error) {
    return { error: error.message };
  }
})));
"""


def _dist(glob: str, needle: str) -> Path:
    for module in sorted((PACKAGE / "dist").glob(glob)):
        if needle in module.read_text():
            return module
    raise FileNotFoundError(f"no {glob} with {needle!r}")


async def openclaw_jobs(workdir: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What OpenClaw's cron tool makes of each of `cases` (`{job}` or `{error}`)."""
    data = workdir / "cases.json"
    data.write_text(json.dumps(cases))
    modules = [
        str(PACKAGE / "dist"),
        str(_dist("cron-tool-*.mjs", "function recoverCronObjectFromFlatParams")),
        str(_dist("normalize-*.mjs", "normalizeCronJobPatch as r")),
        str(data),
        str(workdir),
    ]
    answers: list[dict[str, Any]] = await run_node_in(
        workdir, "cron.mjs", _SCRIPT % json.dumps(modules), timeout_s=300
    )
    return answers


NAMED_JOBS: list[dict[str, Any]] = [
    {"payload": {"kind": "systemEvent", "text": "\n  Buy milk  \nand eggs"}},
    {"payload": {"kind": "agentTurn", "message": "Check " + "the build " * 10}},
    {"payload": {"kind": "agentTurn", "message": "🎉" * 40}},
    {"payload": {"kind": "systemEvent", "text": " \n "}, "schedule": {"kind": "at"}},
    {"payload": {"kind": "agentTurn"}, "schedule": {"kind": "cron", "expr": "0 9 * * 1-5 " * 6}},
    {"payload": {"kind": "agentTurn"}, "schedule": {"kind": "every", "everyMs": 60000}},
    {"payload": {"kind": "agentTurn"}, "schedule": {"kind": "every", "everyMs": 1.5}},
    {"payload": {"kind": "agentTurn"}, "schedule": {"kind": "every", "everyMs": "60000"}},
    {"payload": {"kind": "command", "argv": ["make", "test"]}, "schedule": {}},
    {"payload": {"text": "no kind"}, "schedule": {"kind": "stream"}},
]

_NAMES_SCRIPT = """
import { pathToFileURL } from "node:url";
const [module, jobs] = %s;
const M = await import(pathToFileURL(module).href);
process.stdout.write(JSON.stringify(jobs.map((job) => M.t(job))));
"""


async def openclaw_names(workdir: Path, jobs: list[dict[str, Any]]) -> list[str]:
    """OpenClaw's `inferCronJobName` of each of `jobs`."""
    module = _dist("normalize-*.mjs", "inferCronJobName as t }")
    script = workdir / "names.mjs"
    await trio.Path(script).write_text(_NAMES_SCRIPT % json.dumps([str(module), jobs]))
    with trio.fail_after(120):
        ran = await trio.run_process([str(NODE), str(script)], capture_stdout=True)
    names: list[str] = json.loads(ran.stdout)
    return names


RECORD_SEED, RECORD_COUNT = 2026_09_06, 1500


async def _record() -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="clawlane-cron-flat-") as tmp:
        cases = random_arguments(RECORD_SEED, RECORD_COUNT)
        answers = await openclaw_jobs(Path(tmp), cases)
    body = {
        "openclaw": "2026.9.6",
        "what": "the job OpenClaw's cron tool makes of add/update arguments with job fields "
        "flat beside action, or its error (tests/runtime/tools/_automations_flat_cases.py)",
        "cases": [{"arguments": c, **a} for c, a in zip(cases, answers, strict=True)],
    }
    RECORD.write_text(json.dumps(body, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {RECORD}")


if __name__ == "__main__":
    sys.exit(trio.run(_record))
