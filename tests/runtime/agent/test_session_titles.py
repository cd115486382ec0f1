"""`derived_title`: a session's label, else its display name, else OpenClaw 2026.9.6's goal
title of its first user message. The expected titles are what OpenClaw's own
`deriveGoalSessionTitle` (dist/derive-goal-session-title-*.mjs, under Node 24) returned for
the same texts."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.agent._session_titles import derived_title
from runtime.sessions import SessionRow


def _row(**more: Any) -> SessionRow:
    return SessionRow(
        key="agent:main:t", sessionId="s", agentId="main", createdAt=1, updatedAt=1, **more
    )


def _user(text: str, **more: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1, **more}


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("please help me. fix the build!  now", "Fix the build!"),
        ("hello world", "Hello world"),
        ("/new session", None),
        ("  write\n\nthe   docs for x", "Write the docs for x"),
        (
            "Über alles is a long sentence that keeps going and going past sixty characters for sure",
            "Über alles is a long sentence that keeps going and going…",
        ),
        ("a" * 70, "A" + "a" * 58 + "…"),
        ("x 😀" * 30, "X " + "😀x " * 13 + "😀x…"),
        ("<environment_context> stuff", None),
        ("(Fix) the thing.", "(Fix) the thing."),
        ('"review this PR please. thanks', '"review this PR please.'),
        ("ok. ok? list all the things.", "List all the things."),
    ],
)
def test_the_first_user_message_gives_openclaws_goal_title(text: str, title: str | None) -> None:
    assert derived_title(_row(), [_user(text)]) == title


def test_a_label_or_display_name_comes_first_and_another_sessions_message_is_skipped() -> None:
    messages = [
        {"role": "assistant", "content": [{"type": "text", "text": "fix nothing"}]},
        _user("write the tests", provenance={"kind": "inter_session"}),
        {"role": "user", "content": [{"type": "text", "text": "review the diff"}]},
    ]
    assert derived_title(_row(), messages) == "Review the diff"
    assert derived_title(_row(label="kid", displayName="d"), messages) == "kid"
    assert derived_title(_row(displayName="d"), messages) == "d"
    assert derived_title(_row(), []) is None
