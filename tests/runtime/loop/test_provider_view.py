"""A session's context as a provider sees it, kept as the context grows.

`provider_clean` says when `provider_history` would keep messages whole, so a session that
knows its context is clean sends it without walking it for every run; a request that says
how big its leading messages are (`known_tokens`) is sized without walking them either.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.llm import (
    AssistantMessage,
    Message,
    ModelRequest,
    TextContent,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    estimate_message_tokens,
)
from runtime.llm._local import request_tokens
from runtime.llm._tokens import estimate_context_tokens
from runtime.llm._types import ThinkingContent, ToolCallContent
from runtime.loop import provider_clean
from runtime.loop._agent import provider_history

_IDS = ("a", "b", "c")


def _user(text: str) -> Message:
    return UserMessage(content=text, timestamp=1)


def _answer(text: str) -> Message:
    return AssistantMessage(content=[TextContent(text=text)], timestamp=1)


def _failed(text: str) -> Message:
    return AssistantMessage(content=[TextContent(text=text)], timestamp=1, stopReason="error")


def _calls(ids: list[str]) -> Message:
    calls = [ToolCallContent(id=i, name="read", arguments={"path": i}) for i in ids]
    return AssistantMessage(
        content=[ThinkingContent(thinking="hm"), *calls], timestamp=1, stopReason="toolUse"
    )


def _result(call_id: str) -> Message:
    return ToolResultMessage(
        toolCallId=call_id,
        toolName="read",
        content=[TextContent(text="ok")],
        isError=False,
        timestamp=1,
    )


_messages = st.lists(
    st.one_of(
        st.text(max_size=8).map(_user),
        st.text(max_size=8).map(_answer),
        st.text(max_size=8).map(_failed),
        st.lists(st.sampled_from(_IDS), min_size=1, max_size=2, unique=True).map(_calls),
        st.sampled_from(_IDS).map(_result),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_messages, _messages)
def test_clean_messages_are_what_a_provider_sees_and_two_clean_runs_make_a_clean_whole(
    a: list[Message], b: list[Message]
) -> None:
    if provider_clean(a):
        assert provider_history(a) == a
    else:  # conservative, never wrong the other way: what it calls unclean, the walk changes
        assert provider_history(a) != a or _result_before_its_call(a)
    if provider_clean(a) and provider_clean(b):
        assert provider_clean(a + b) and provider_history(a + b) == a + b


def _result_before_its_call(messages: list[Message]) -> bool:
    """A tool result ahead of its call: `provider_history` counts it as the answer (it looks
    the whole list over); `provider_clean` does not, and takes the slow path."""
    seen: set[str] = set()
    for m in messages:
        if isinstance(m, ToolResultMessage):
            seen.add(m.toolCallId)
        elif isinstance(m, AssistantMessage):
            calls = {c.id for c in m.content if isinstance(c, ToolCallContent)}
            if calls & seen:
                return True
    return False


def test_what_a_run_cut_short_or_failed_leaves_is_not_clean() -> None:
    assert provider_clean([_user("hi"), _answer("hello")])
    assert not provider_clean([_user("hi"), _failed("HTTP 500")])
    assert not provider_clean([_user("hi"), _calls(["a", "b"]), _result("a")])
    assert provider_clean([_user("hi"), _calls(["a", "b"]), _result("b"), _result("a")])


def test_a_request_sized_from_its_known_head_is_sized_as_a_whole() -> None:
    messages = [_user("hello there"), _answer("a reply of some length"), _user("and more")]
    head = sum(estimate_message_tokens(m) for m in messages[:2])
    tools = [ToolSpec(name="read", description="Read a file.", parameters={"type": "object"})]
    whole = ModelRequest(model="m", system_prompt="sys" * 7, messages=messages, tools=tools)
    known = ModelRequest(
        model="m", system_prompt="sys" * 7, messages=messages, tools=tools, known_tokens=(2, head)
    )
    assert request_tokens(known) == request_tokens(whole)
    assert request_tokens(whole) == estimate_context_tokens("sys" * 7, messages, tools)
