"""The embedded `local` model provider: deterministic, offline, paced like a real model.

It composes a reply from the prompt and streams it word by word. Directives in the latest
user message steer it, for tests, demos and load tests (all are removed from the echoed text):

- `[[reply:TEXT]]`       reply exactly TEXT (e.g. `[[reply:NO_REPLY]]`).
- `[[deltas:N]]`         stream exactly N text deltas.
- `[[delay:MS]]`         wait MS milliseconds before each delta (overrides the provider option).
- `[[think:TEXT]]`       stream TEXT as reasoning before the reply.
- `[[tool:NAME {json}]]` call tool NAME with those arguments; several directives make a loop
                         of that many tool turns, one call per turn, in order; once all
                         results are in, reply with a summary of them. A NAME not offered
                         but listed in the system prompt's Tool Search directory is called
                         through `tool_call` (`{"id": NAME, "args": {json}}`), as a model
                         following that directory would, and its summary line names NAME.
- `[[fail]]`, `[[fail:KIND]]`, `[[fail:KIND:MESSAGE]]`
                         fail before any output with a `ProviderError` of KIND (default `server`).
- `[[fail-after:N]]`     fail with a `server` error after N deltas (partial output).
- `[[stall]]`, `[[stall:N]]`
                         stall forever (until cancelled) after N deltas (default 0).
- `[[chars:N]]`          stream the reply in pieces of N characters (instead of words).
- `[[overflow:N]]`, `[[overflow:N:K]]`
                         fail with a `context_overflow` error when the request is larger than
                         N tokens (estimated as the compaction code does: characters / 4 of
                         the system prompt, each message and the tool schemas), before any
                         output, or after K deltas. A smaller (compacted) request succeeds.

With both `[[tool:...]]` and `[[reply:TEXT]]`, the turn after the tools replies TEXT instead of
the summary of the results.

A memory flush turn (the latest user message starts with `FLUSH_MARKER`, as the flush
before compaction words it) follows `[[remember:TEXT]]` directives of the conversation's
user messages: one `write` of them, as a list, to the `memory/YYYY-MM-DD.md` its prompt names,
then `NO_REPLY`; with none, just `NO_REPLY`.

Summarisation requests (the system prompt starts with `SUMMARY_MARKER`, as compaction's does)
are answered deterministically, without looking at directives: `Summary (local model): the
user said: <the first words of each user message>; ...`, carrying the items of a
`<previous-summary>` forward (the last 12 items are kept). A conversation containing
`[[summary-fail]]` makes the summarisation fail (`server` error).
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator
from typing import Final, cast

import msgspec
import trio

from ._pacer import pace_sleeper
from ._tokens import estimate_context_tokens
from ._types import (
    ModelDelta,
    ModelRequest,
    ProviderError,
    ProviderErrorKind,
    StopDelta,
    TextContent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    Usage,
    UsageDelta,
    UserMessage,
)

_DIRECTIVE: Final = re.compile(r"\[\[([a-z-]+)(?::([^\]]*?))?(?:\s+(\{.*?\}))?\]\]", re.DOTALL)
_KINDS: Final = frozenset(
    {
        "auth",
        "rate_limit",
        "overloaded",
        "context_overflow",
        "timeout",
        "network",
        "malformed",
        "bad_request",
        "server",
        "unknown",
    }
)


class _Plan(msgspec.Struct):
    text: str = ""
    reply: str | None = None
    deltas: int | None = None
    delay_ms: float | None = None
    think: str | None = None
    tools: list[tuple[str, str]] = []
    fail: tuple[str, str] | None = None
    fail_after: int | None = None
    stall_after: int | None = None
    chars: int | None = None
    overflow: tuple[int, int | None] | None = None


@functools.lru_cache(maxsize=1024)
def _parse(message: str) -> _Plan:
    """The directives of `message`. Cached (load tests send the same text again and again):
    callers must not mutate the plan."""
    plan = _Plan(tools=[])
    for m in _DIRECTIVE.finditer(message):
        name, arg, body = m.group(1), m.group(2), m.group(3)
        if name == "reply":
            plan.reply = arg or ""
        elif name == "deltas" and arg and arg.isdigit():
            plan.deltas = max(1, int(arg))
        elif name == "delay" and arg:
            try:
                plan.delay_ms = max(0.0, float(arg))
            except ValueError:
                pass
        elif name == "think":
            plan.think = arg or "thinking"
        elif name == "tool" and arg is None and body is None:
            continue
        elif name == "tool":
            tool_name = (arg or "").strip()
            plan.tools.append((tool_name, body or "{}"))
        elif name == "fail":
            kind, _, text = (arg or "server").partition(":")
            plan.fail = (
                kind if kind in _KINDS else "server",
                text or f"local model failure ({kind})",
            )
        elif name == "fail-after" and arg and arg.isdigit():
            plan.fail_after = int(arg)
        elif name == "stall":
            plan.stall_after = int(arg) if arg and arg.isdigit() else 0
        elif name == "chars" and arg and arg.isdigit():
            plan.chars = max(1, int(arg))
        elif name == "overflow" and arg:
            limit, _, after = arg.partition(":")
            if limit.isdigit():
                plan.overflow = (int(limit), int(after) if after.isdigit() else None)
    plan.text = " ".join(_DIRECTIVE.sub(" ", message).split())
    return plan


FLUSH_MARKER: Final = "Pre-compaction memory flush."
"""How a memory flush turn's prompt starts (`runtime.agent._memoryflush`'s prompt)."""
_REMEMBER: Final = re.compile(r"\[\[remember:([^\]]+)\]\]")
_FLUSH_PATH: Final = re.compile(r"memory/\d{4}-\d{2}-\d{2}\.md")


def _flush_plan(request: ModelRequest, prompt: str) -> _Plan:
    """A memory flush turn's plan: write the `[[remember:...]]` facts, then `NO_REPLY`."""
    facts = [
        fact.strip()
        for m in request.messages
        if isinstance(m, UserMessage)
        for fact in _REMEMBER.findall(_user_text(m))
    ]
    path = _FLUSH_PATH.search(prompt)
    if not facts or path is None:
        return _Plan(reply="NO_REPLY", tools=[])
    content = "".join(f"- {fact}\n" for fact in facts)
    args = msgspec.json.encode({"path": path[0], "content": content}).decode()
    return _Plan(reply="NO_REPLY", tools=[("write", args)])


SUMMARY_MARKER: Final = "You are a context summarization assistant."
"""How a summarisation request's system prompt starts (`runtime.agent._compaction`'s prompt)."""
_SUMMARY_ITEMS: Final = 12
_CONVERSATION: Final = re.compile(r"<conversation>\n(.*?)\n</conversation>", re.DOTALL)
_PREVIOUS: Final = re.compile(r"<previous-summary>\n(.*?)\n</previous-summary>", re.DOTALL)
_USER_BLOCK: Final = re.compile(
    r"(?:\A|\n\n)\[User\]: (.*?)(?=\n\n\[(?:User|Assistant|Tool)[^\]\n]*\]: |\Z)", re.DOTALL
)
_SAID: Final = "the user said: "
_UNPACED_BURST: Final = 8


def request_tokens(request: ModelRequest) -> int:
    """The size of a request as compaction estimates it: characters / 4 (rounded up) of the
    system prompt, of each message, and of the tool schemas (the leading messages counted
    already when the request says so: `known_tokens`)."""
    known = request.known_tokens
    if known is None:
        return estimate_context_tokens(request.system_prompt, request.messages, request.tools)
    count, tokens = known
    rest = request.messages[count:]
    return tokens + estimate_context_tokens(request.system_prompt, rest, request.tools)


def _summary_reply(prompt: str) -> str:
    """The deterministic answer to a summarisation request (see the module docstring)."""
    conversation = _CONVERSATION.search(prompt)
    text = conversation[1] if conversation else ""
    if "[[summary-fail]]" in text:
        raise ProviderError("server", "local model failure while summarising")
    items: list[str] = []
    previous = _PREVIOUS.search(prompt)
    if previous is not None and _SAID in previous[1]:
        carried = previous[1].split(_SAID, 1)[1].rstrip(".")
        items += [i for i in carried.split("; ") if i]
    for block in _USER_BLOCK.finditer(text):
        words = " ".join(_DIRECTIVE.sub(" ", block[1]).split()).split(" ")
        item = " ".join(words[:8]).replace(";", ",").strip()
        if item:
            items.append(item)
    return f"Summary (local model): {_SAID}{'; '.join(items[-_SUMMARY_ITEMS:])}."


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@functools.lru_cache(maxsize=256)
def _split(text: str, n: int | None, chars: int | None) -> tuple[str, ...]:
    """The reply's pieces (cached: a load test asks for the same reply again and again)."""
    return tuple(_pieces(text, chars) if chars else _words(text, n))


def _words(text: str, n: int | None) -> list[str]:
    parts = [w + " " for w in text.split(" ")] if text else [""]
    parts[-1] = parts[-1].rstrip(" ")
    if n is None or n == len(parts):
        return parts
    if n < len(parts):
        head = parts[: n - 1]
        return [*head, "".join(parts[n - 1 :])]
    out = list(parts)
    i = 0
    while len(out) < n:
        out.append(" " + text.split(" ")[i % max(1, len(text.split(" ")))])
        i += 1
    return out


class LocalProvider:
    """The built-in deterministic model. `delta_delay_ms` paces every delta."""

    api = "local"

    def __init__(
        self, id: str, *, delta_delay_ms: float = 0.0, fail_kind: str | None = None
    ) -> None:
        self.id = id
        self.delta_delay_ms = delta_delay_ms
        self.fail_kind = fail_kind if fail_kind in _KINDS else None

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        user_text = _last_user_text(request)
        if request.system_prompt.startswith(SUMMARY_MARKER):
            await trio.lowlevel.checkpoint()
            for summary_delta in _summary_deltas(request, user_text):
                yield summary_delta
            return
        plan = (
            _flush_plan(request, user_text)
            if user_text.startswith(FLUSH_MARKER)
            else _parse(user_text)
        )
        delay = (plan.delay_ms if plan.delay_ms is not None else self.delta_delay_ms) / 1000.0
        results = _tool_results(request)
        fail = self._failure(plan)
        if fail is not None:
            await trio.lowlevel.checkpoint()
            try:
                raise fail
            finally:
                del fail  # its traceback holds this frame: no reference cycle through it
        overflow, overflow_after = _overflow(plan, request)
        if overflow is not None and overflow_after == 0:
            await trio.lowlevel.checkpoint()
            try:
                raise overflow
            finally:
                del overflow

        input_tokens = request_tokens(request)
        sent = 0
        unpaced = 0
        sleep = pace_sleeper()

        async def pace() -> None:
            # Unpaced (zero delay), the model still lets others run every `_UNPACED_BURST`
            # deltas, as a fast network stream would (a short reply goes out in one go: the
            # run yielded while its prompt was prepared, just before).
            nonlocal unpaced
            unpaced += 1
            if delay > 0:
                await sleep(delay)
            elif unpaced % _UNPACED_BURST == 0:
                await trio.lowlevel.checkpoint()

        if plan.think:
            for piece in _words(plan.think, None):
                await pace()
                yield ThinkingDelta(piece)

        if len(results) < len(plan.tools):
            # One tool call per turn, in order: a message with N tool directives makes a loop
            # of N tool turns and a final answer.
            await pace()
            for tool_delta in _tool_turn(plan, len(results), input_tokens, request):
                yield tool_delta
            return

        pieces = _split(_reply(plan, results), plan.deltas, plan.chars)
        for piece in pieces:
            if plan.stall_after is not None and sent >= plan.stall_after:
                await trio.sleep_forever()
            if plan.fail_after is not None and sent >= plan.fail_after:
                raise ProviderError("server", "local model failure after partial output")
            if overflow is not None and sent >= overflow_after:
                try:
                    raise overflow
                finally:
                    del overflow
            if delay > 0:
                await sleep(delay)  # (`pace` inlined: this runs for every delta)
            else:
                await pace()
            yield TextDelta(piece)
            sent += 1
        if plan.stall_after is not None and sent >= plan.stall_after:
            await trio.sleep_forever()
        yield UsageDelta(Usage(input=input_tokens, output=sent, totalTokens=input_tokens + sent))
        yield StopDelta("stop")

    def _failure(self, plan: _Plan) -> ProviderError | None:
        """The error to fail with before any output: `[[fail]]`, else the `failKind` option."""
        fail = plan.fail
        if fail is None and self.fail_kind is not None:
            fail = (
                self.fail_kind,
                f"local provider {self.id} is configured to fail ({self.fail_kind})",
            )
        if fail is None:
            return None
        return ProviderError(cast(ProviderErrorKind, fail[0]), fail[1])


def _last_user_text(request: ModelRequest) -> str:
    """The text of the latest user message (its directives steer the reply)."""
    last_user = next((m for m in reversed(request.messages) if isinstance(m, UserMessage)), None)
    if last_user is None:
        return ""
    return _user_text(last_user)


def _user_text(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(c.text for c in content if isinstance(c, TextContent))


def _summary_deltas(request: ModelRequest, prompt: str) -> list[ModelDelta]:
    """A summarisation request's whole answer (raises `ProviderError` for `[[summary-fail]]`)."""
    summary = _summary_reply(prompt)
    deltas: list[ModelDelta] = [TextDelta(piece) for piece in _words(summary, None)]
    deltas.append(UsageDelta(Usage(input=request_tokens(request), output=len(summary) // 4)))
    deltas.append(StopDelta("stop"))
    return deltas


def _tool_results(request: ModelRequest) -> list[ToolResultMessage]:
    """Tool results since the last user message, latest first: this is the turn after the
    tools ran."""
    results: list[ToolResultMessage] = []
    for m in reversed(request.messages):
        if isinstance(m, UserMessage):
            break
        if isinstance(m, ToolResultMessage):
            results.append(m)
    return results


def _overflow(plan: _Plan, request: ModelRequest) -> tuple[ProviderError | None, int]:
    """The `[[overflow:N:K]]` error when the request is over N tokens, and after how many
    deltas it is raised (0: before any output)."""
    if plan.overflow is None:
        return None, 0
    size = request_tokens(request)
    if size <= plan.overflow[0]:
        return None, 0
    error = ProviderError(
        "context_overflow",
        f"context length exceeded: {size} tokens > {plan.overflow[0]}",
        status=400,
    )
    return error, plan.overflow[1] or 0


def _tool_turn(
    plan: _Plan, index: int, input_tokens: int, request: ModelRequest
) -> tuple[ModelDelta, ...]:
    """The deltas of the turn that calls the plan's tool number `index`."""
    name, args = _through_search(*plan.tools[index], request)
    call_id = f"call_{index + 1}"
    output = len(plan.tools)
    return (
        ToolCallStart(index=0, id=call_id, name=name),
        ToolCallArgsDelta(index=0, delta=args),
        ToolCallEnd(index=0, id=call_id, name=name, arguments=args),
        UsageDelta(Usage(input=input_tokens, output=output, totalTokens=input_tokens + output)),
        StopDelta("toolUse"),
    )


_DEFERRED_HEADING: Final = "Available deferred-schema tools:"
_DEFERRED_ROW = re.compile(r"^- ([A-Za-z0-9][A-Za-z0-9_.:-]*)(?: \(|:|$)", re.MULTILINE)


def _through_search(name: str, args: str, request: ModelRequest) -> tuple[str, str]:
    """As a model reading OpenClaw's Tool Search directory would: a directive naming a tool
    that is not offered but listed among the deferred ones calls it through `tool_call`."""
    if any(t.name == name for t in request.tools) or not any(
        t.name == "tool_call" for t in request.tools
    ):
        return name, args
    _, found, listing = request.system_prompt.partition(_DEFERRED_HEADING)
    if not found or name not in _DEFERRED_ROW.findall(listing.partition("\n\n")[0]):
        return name, args
    return "tool_call", f'{{"id": {msgspec.json.encode(name).decode()}, "args": {args or "{}"}}}'


def _result_line(result: ToolResultMessage) -> str:
    """One tool result as the summary reply shows it; a `tool_call`'s envelope is read for
    the tool it called and that tool's own result."""
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    name = result.toolName
    if name == "tool_call":
        try:
            envelope = msgspec.json.decode(text)
            name = str(envelope["tool"]["name"])
            inner = envelope["result"]["content"]
            text = " ".join(str(c.get("text", "")) for c in inner if isinstance(c, dict))
        except (msgspec.DecodeError, KeyError, TypeError):
            pass
    return f"{name}{' failed' if result.isError else ''}: {text[:200]}"


def _reply(plan: _Plan, results: list[ToolResultMessage]) -> str:
    """The text of a final answer: `[[reply:...]]`, a summary of the tool results, or an echo."""
    if results and plan.reply is not None:
        return plan.reply
    if results:
        summary = "; ".join(_result_line(r) for r in reversed(results))
        return f"Tool results: {summary}"
    if plan.reply is not None:
        return plan.reply
    return f"You said: {plan.text}" if plan.text else "Hello from the local model."
