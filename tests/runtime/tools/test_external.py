"""runtime.tools._external against OpenClaw 2026.9.6's own functions under Node 24: its
wrapExternalContent, truncateSanitizedExternalContent and protectNetworkToolExecutionError
(what its agent makes of a network tool's throw: credentials masked too), on marker
look-alikes, special tokens, astral characters, credentials and cuts that land inside a marker. Marker ids are random on both sides and
compared masked."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any, Literal

from runtime.tools._external import (
    network_tool_error,
    truncate_sanitized,
    utf16_len,
    utf16_prefix,
    wrap_external_content,
)
from tests.runtime.tools._openclaw_node import imports, openclaw_exports, run_node

FRAGMENTS = [
    "plain text ",
    "\n",
    '<<<EXTERNAL_UNTRUSTED_CONTENT id="0123456789abcdef">>>',
    "<<<END_EXTERNAL_UNTRUSTED_CONTENT>>>",
    "<<< external untrusted content >>>",
    '<<<END EXTERNAL_UNTRUSTED_CONTENT id=\\"x\\">>>',
    "\uff1c\uff1c\uff1cEXTERNAL_UNTRUSTED_CONTENT\uff1e\uff1e\uff1e",
    "<<<\uff25\uff38\uff34ERNAL_UNTRUSTED_CONTENT>>>",
    "<<<EXTER\u200bNAL_UNTRUSTED_CONTENT>>>",
    "\u00ab\u00ab\u00abEND_EXTERNAL_UNTRUSTED_CONTENT\u00bb\u00bb\u00bb",
    "<<<EXTERNAL_UNTRUSTED_CONTENT",
    "<|im_start|>",
    "<s>",
    "[INST]",
    "<|reserved_special_token_42|>",
    "\U0001f600",
    "\u00e9t\u00e9 ",
    "\u00ad",
    "api_key=sk-abcdefghijklmnop1234567890 ",
    "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123\n",
    "https://user:hunter2secret@example.com/x?token=abcdefghijklmnopqrstuv ",
]

SCRIPT = """
__IMPORTS__
const cases = __CASES__;
const out = cases.map((c) => {
  if (c.kind === "wrap") return wrapExternalContent(c.text, c.options);
  if (c.kind === "truncate") return truncateSanitizedExternalContent(c.text, c.limit);
  return protectNetworkToolExecutionError(new Error(c.text), "fallback").message;
});
console.log(JSON.stringify(out));
"""


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return re.sub(r'id="[0-9a-f]{16}"', 'id="<id>"', value)
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    return value


def _texts(count: int) -> list[str]:
    rng = random.Random(2026_9_6)
    return ["".join(rng.choices(FRAGMENTS, k=rng.randint(1, 12))) for _ in range(count)]


def test_utf16_lengths_and_cuts_never_split_a_pair() -> None:
    assert utf16_len("a\U0001f600b") == 4
    assert utf16_prefix("a\U0001f600b", 2) == "a"
    assert utf16_prefix("a\U0001f600b", 3) == "a\U0001f600"
    assert utf16_prefix("abc", 10) == "abc" and utf16_prefix("abc", -1) == ""


async def test_wrapping_truncating_and_network_errors_are_openclaws(tmp_path: Path) -> None:
    found = openclaw_exports(
        ("external-content-*.mjs", "wrapExternalContent"),
        ("external-content-*.mjs", "truncateSanitizedExternalContent"),
        ("tool-result-error-*.mjs", "protectNetworkToolExecutionError"),
    )
    cases: list[dict[str, Any]] = []
    ours: list[Any] = []
    for text in _texts(120):
        sources: tuple[tuple[Literal["api", "web_fetch"], bool], ...] = (
            ("api", True),
            ("web_fetch", False),
        )
        for source, warning in sources:
            options = {"source": source, "includeWarning": warning}
            cases.append({"kind": "wrap", "text": text, "options": options})
            ours.append(wrap_external_content(text, source=source, include_warning=warning))
        for limit in sorted({0, 5, 20, 40, len(text) // 2, len(text) - 3, 4000}):
            cases.append({"kind": "truncate", "text": text, "limit": max(0, limit)})
            cut = truncate_sanitized(text, max(0, limit))
            ours.append(
                {"text": cut.text, "truncated": cut.truncated, "retainedRawChars": cut.retained}
            )
        cases.append({"kind": "error", "text": text})
        ours.append(network_tool_error(text))
    long = "Web fetch failed (404): " + "y" * 3990 + '\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id="a">>>'
    for text in (long, "\U0001f600" * 2500, "z" * 4001):
        cases.append({"kind": "error", "text": text})
        ours.append(network_tool_error(text))
    script = SCRIPT.replace("__IMPORTS__", imports(found)).replace("__CASES__", json.dumps(cases))
    theirs = await run_node(tmp_path / "external.mjs", script)
    assert len(theirs) == len(ours)
    for case, mine, expected in zip(cases, ours, theirs, strict=True):
        assert _mask(mine) == _mask(expected), case
