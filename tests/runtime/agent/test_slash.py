"""Which chat messages are slash commands (`runtime.agent._slash`)."""

from __future__ import annotations

from runtime.agent._slash import (
    COMMANDS,
    THINK_LEVELS,
    commands_view,
    find_command,
    normalize_reasoning_level,
    normalize_think_level,
    normalize_verbose_level,
    parse_duration_ms,
)


def test_known_commands_and_aliases_are_found_with_their_arguments() -> None:
    found = find_command("/think high")
    assert found is not None and found[0].name == "think" and found[1] == "high"
    assert find_command("/T low") is not None and find_command("/T low")[0].name == "think"  # type: ignore[index]
    assert find_command("  /status  ") is not None
    assert find_command("/queue followup debounce:2s")[1] == "followup debounce:2s"  # type: ignore[index]


def test_anything_else_is_a_message_for_the_model() -> None:
    for text in ("/foo bar", "hello /status", "/", "//status", "status", "/help me with this"):
        assert find_command(text) is None, text


def test_commands_list_entries_have_the_schema_fields() -> None:
    views = commands_view()
    assert len(views) == len(COMMANDS)
    think = next(v for v in views if v["name"] == "think")
    assert think["textAliases"] == ["/think", "/thinking", "/t"] and think["acceptsArgs"]
    assert all("args" not in v for v in commands_view(include_args=False))


def test_durations() -> None:
    assert parse_duration_ms("500") == 500 and parse_duration_ms("2s") == 2000
    assert parse_duration_ms("1m") == 60_000 and parse_duration_ms("soon") is None


def test_levels_normalize_as_openclaws_do() -> None:
    think = {
        "Extra-High": "xhigh",
        "auto": "adaptive",
        "none": "off",
        "ON": "low",
        "think": "minimal",
        "think_hard": "low",
        "harder": "medium",
        "ultrathink": "high",
        " max ": "max",
    }
    assert {raw: normalize_think_level(raw) for raw in think} == think
    assert set(think.values()) <= set(THINK_LEVELS)
    for bad in ("", "think harder", "x" * 10_000, "hi gh"):
        assert normalize_think_level(bad) is None, bad
    assert [normalize_verbose_level(v) for v in ("YES", "all", "0", "loud")] == [
        "on",
        "full",
        "off",
        None,
    ]
    assert [normalize_reasoning_level(v) for v in ("show", "draft", "hidden", "maybe")] == [
        "on",
        "stream",
        "off",
        None,
    ]
