"""`progress_card`: the session's one status card, a step plan and/or a short Markdown note
that the operators' UIs show beside the session (OpenClaw's `progress_card`).

Every call replaces the whole card; both parts empty clears it. The rules, as OpenClaw's
(`normalize_card`): `markdown` at most 8,192 UTF-8 bytes, blank counts as absent; `plan` at
most 50 steps, each a non-empty `step` of at most 512 UTF-8 bytes and a `status` of
`pending`, `in_progress` or `completed`, at most one `in_progress`; invisible and
bidirectional-control characters are removed from both before storing.

The card belongs to the session the user talks to: a subagent's session gets a tool error
(its result goes back to its parent, which owns the card), as OpenClaw's.

The tool knows nothing of connections: the host hands it a `CardDesk` (the gateway's
`actors.ProgressCards`), which keeps the card and tells the operators it changed. The
model reads `Progress card updated (rev N, done/total done)`, `Progress card updated (rev N)`
(no plan) or `Progress card cleared`, then `details` as JSON (OpenClaw's two blocks);
`details` is `{revision, steps: {completed, total} | null}`.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final, Literal, Protocol, get_args

import msgspec

from runtime.llm import TextContent

from ._errors import ToolError
from ._tool import ToolContext, ToolResult

__all__ = [
    "CardDesk",
    "ProgressCardError",
    "ProgressCardParams",
    "ProgressCardTool",
    "normalize_card",
]

MAX_MARKDOWN_BYTES: Final = 8192
MAX_STEPS: Final = 50
MAX_STEP_BYTES: Final = 512
_INVISIBLE: Final = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u206a-\u206f\ufeff\U000e0000-\U000e007f]"
)
StepStatus = Literal["pending", "in_progress", "completed"]


class ProgressCardError(ToolError, ValueError):
    """A card that breaks the rules (the message names the part, as OpenClaw's)."""


class CardDesk(Protocol):
    """Where a run's progress card goes: the host's progress cards."""

    def put(
        self,
        session_key: str,
        card: dict[str, Any],
        *,
        agent_id: str | None = None,
        expected_revision: int | None = None,
    ) -> dict[str, Any] | None:
        """Replace the card of `session_key` with `card` (normalized: `markdown`, `steps`;
        empty clears it) and tell the operators; the stored card (`ProgressCard`) or None
        (cleared). Not a checkpoint."""
        ...


def normalize_card(markdown: Any, plan: Any) -> dict[str, Any]:
    """The card `{markdown?, steps?}` made of `markdown` and `plan` by OpenClaw's rules (see
    the module docstring); `{}` clears. Raises `ProgressCardError`. Pure."""
    card: dict[str, Any] = {}
    if markdown is not None:
        if not isinstance(markdown, str):
            raise ProgressCardError("markdown must be a string")
        if len(markdown.encode()) > MAX_MARKDOWN_BYTES:
            raise ProgressCardError(
                f"progress card markdown exceeds {MAX_MARKDOWN_BYTES} UTF-8 bytes"
            )
        clean = _INVISIBLE.sub("", markdown)
        if clean.strip():
            card["markdown"] = clean
    if plan is not None:
        steps = _steps(plan)
        if steps:
            card["steps"] = steps
    return card


def _steps(plan: Any) -> list[dict[str, str]]:
    if not isinstance(plan, list):
        raise ProgressCardError("plan must be an array")
    if len(plan) > MAX_STEPS:
        raise ProgressCardError(f"plan can contain at most {MAX_STEPS} steps")
    steps: list[dict[str, str]] = []
    for index, entry in enumerate(plan):
        if not isinstance(entry, dict):
            raise ProgressCardError(f"plan[{index}] must be an object")
        text, status = entry.get("step"), entry.get("status")
        if not isinstance(text, str):
            raise ProgressCardError(f"plan[{index}].step must be a string")
        if len(text.encode()) > MAX_STEP_BYTES:
            raise ProgressCardError(f"plan[{index}].step exceeds {MAX_STEP_BYTES} UTF-8 bytes")
        text = _INVISIBLE.sub("", text)
        if not text.strip():
            raise ProgressCardError(f"plan[{index}].step must not be empty")
        if status not in ("pending", "in_progress", "completed"):
            raise ProgressCardError(
                f"plan[{index}].status must be one of pending, in_progress, completed"
            )
        steps.append({"step": text, "status": status})
    if sum(s["status"] == "in_progress" for s in steps) > 1:
        raise ProgressCardError("plan can contain at most one in_progress step")
    return steps


class ProgressCardStep(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    step: Annotated[str, msgspec.Meta(min_length=1)]
    status: Annotated[
        StepStatus,
        msgspec.Meta(  # OpenClaw's union of literals
            extra_json_schema={
                "anyOf": [{"type": "string", "const": s} for s in get_args(StepStatus)]
            }
        ),
    ]


class ProgressCardParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    markdown: str | None = None
    plan: Annotated[list[ProgressCardStep], msgspec.Meta(max_length=MAX_STEPS)] | None = None


class ProgressCardTool:
    """`progress_card` (see the module docstring), kept by the host's `desk`."""

    name = "progress_card"
    description = (
        "Maintain this session's progress card: the one status surface shown next to the "
        "session in the operators' UIs, for someone not reading the transcript. Create one "
        "only for substantial work with at least two meaningful sequential steps (not for "
        "greetings, quick questions or single-step requests). Each call replaces the whole "
        "card. `markdown`: a compact note; for measurable work with a known total, lead with a "
        'progress bar such as <progress aria-label="Files processed · 3/7" value="3" '
        'max="7"></progress> using observed counts (never invented percentages), then a short '
        "result, blocker or next action. `plan`: an ordered checklist (pending | in_progress "
        "| completed, at most one in_progress) for genuinely sequential work. Do not repeat "
        "the same facts in both. Call with both empty to clear. Update on meaningful change, "
        "not every message. Max 8 KB markdown, 50 steps."
    )
    params = ProgressCardParams
    mutating = False

    def __init__(self, desk: CardDesk) -> None:
        self._desk = desk

    async def run(self, args: ProgressCardParams, ctx: ToolContext) -> ToolResult:
        """Store the card (not a checkpoint inside; the call is one). A card that breaks
        the rules raises `ProgressCardError` (an error result the model reads)."""
        if ":subagent:" in ctx.session_key:
            raise ProgressCardError(
                "progress_card is available only in the parent session; report progress in "
                "your result instead"
            )
        plan = None if args.plan is None else msgspec.to_builtins(args.plan)
        card = self._desk.put(
            ctx.session_key, normalize_card(args.markdown, plan), agent_id=ctx.agent_id
        )
        steps = (card or {}).get("steps") or []
        done = sum(s["status"] == "completed" for s in steps)
        payload = {
            "revision": None if card is None else card["revision"],
            "steps": {"completed": done, "total": len(steps)} if steps else None,
        }
        if card is None:
            text = "Progress card cleared"
        elif steps:
            text = f"Progress card updated (rev {card['revision']}, {done}/{len(steps)} done)"
        else:
            text = f"Progress card updated (rev {card['revision']})"
        blocks = [TextContent(text=text), TextContent(text=json.dumps(payload, indent=2))]
        return ToolResult(content=list(blocks), details=payload)
