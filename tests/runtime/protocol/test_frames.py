"""What no method's params may hold (`check_params_values`, run by `decode_params`), and how
a frame that cannot be decoded is refused naming where (`decode_inbound`)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import msgspec
import pytest
from hypothesis import given

from runtime.protocol import (
    INVALID_REQUEST,
    MAX_PARAMS_DEPTH,
    AgentWaitParams,
    GatewayError,
    RequestFrame,
    check_params_values,
    decode_inbound,
    decode_params,
)


def frame(params_json: str) -> str:
    return '{"type":"req","id":"r1","method":"m","params":' + params_json + "}"


def params_of(params_json: str) -> Any:
    decoded = decode_inbound(frame(params_json))
    assert isinstance(decoded, RequestFrame)
    return decoded.params


def refusal(method: str, raw: Any) -> str:
    with pytest.raises(GatewayError) as caught:
        check_params_values(method, raw)
    assert caught.value.code == INVALID_REQUEST
    return caught.value.message


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_integers_of_64_bits_pass_and_any_larger_is_refused_naming_where() -> None:
    check_params_values("m", {"a": 2**63 - 1, "b": -(2**63), "c": [0, True], "d": None})
    assert refusal("agent.wait", {"runId": "r", "timeoutMs": 10**400}) == (
        "invalid agent.wait params: integer out of range (64 bits) - at `$.timeoutMs`"
    )
    assert "at `$.a[1].b`" in refusal("m", {"a": [1, {"b": 2**63}]})
    assert "at `$.x`" in refusal("m", {"x": -(2**63) - 1})


def test_agent_wait_with_a_timeout_no_float_can_hold_is_invalid_request_not_overflow() -> None:
    """It was `UNAVAILABLE OverflowError: integer division result too large for a float`
    (the handler divides the milliseconds by 1000)."""
    with pytest.raises(GatewayError) as caught:
        decode_params("agent.wait", {"runId": "r", "timeoutMs": 10**400}, AgentWaitParams)
    assert caught.value.code == INVALID_REQUEST and "`$.timeoutMs`" in caught.value.message
    params = decode_params("agent.wait", {"runId": "r", "timeoutMs": 2**63 - 1}, AgentWaitParams)
    assert params.timeoutMs == 2**63 - 1


def test_a_number_out_of_range_in_a_frame_is_refused_naming_its_field() -> None:
    """`1e999` was refused with the whole frame: "Number out of range - at `$.params[...]`"."""
    raw = params_of('{"runId":"r","timeoutMs":1e999}')
    with pytest.raises(GatewayError) as caught:
        decode_params("agent.wait", raw, AgentWaitParams)
    assert caught.value.message == (
        "invalid agent.wait params: number out of range - at `$.timeoutMs`"
    )
    assert "at `$.a[0]`" in refusal("m", params_of('{"a":[-1E400]}'))
    assert params_of('{"a":1.5e3}') == {"a": 1500.0}


def test_nesting_up_to_the_bound_passes_and_deeper_is_refused_without_recursion() -> None:
    check_params_values("m", {"a": nested(MAX_PARAMS_DEPTH - 1)})
    message = refusal("m", {"a": nested(MAX_PARAMS_DEPTH)})
    assert f"nested deeper than {MAX_PARAMS_DEPTH} levels - at `$.a[0][0]" in message
    assert f"({MAX_PARAMS_DEPTH} levels)" in message
    # The walk is iterative: nesting no recursive walk could take is refused all the same.
    assert "nested deeper" in refusal("m", nested(200_000))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ('{"probe":NaN}', "NaN is not a JSON number - at `$.params.probe`"),
        ('{"a":[1,-Infinity]}', "-Infinity is not a JSON number - at `$.params.a[1]`"),
        ('{"s":"ab\\ud800c"}', "a string holds a lone UTF-16 surrogate - at `$.params.s`"),
        ('{"s":"ab\\udfff"}', "a string holds a lone UTF-16 surrogate - at `$.params.s`"),
        ('{"s":"\\ud83d\\ude00 \\udbff"}', "lone UTF-16 surrogate - at `$.params.s`"),
        (
            '{"ok":"NaN","x":{"k\\ud800":1}}',
            "a key holds a lone UTF-16 surrogate - at `$.params.x`",
        ),
    ],
)
def test_a_frame_that_cannot_be_decoded_is_refused_naming_where(params: str, expected: str) -> None:
    """These were refused without a place ("invalid character (byte 50)", "invalid utf-16
    surrogate pair (byte 86)", "a string holds a lone UTF-16 surrogate")."""
    with pytest.raises(msgspec.DecodeError) as caught:
        decode_inbound(frame(params))
    assert expected in str(caught.value)


def test_what_only_looks_like_a_bad_token_decodes() -> None:
    decoded = params_of('{"t":"NaN","s":"\\\\ud800","pair":"\\ud83d\\ude00"}')
    assert decoded == {"t": "NaN", "s": "\\ud800", "pair": "\U0001f600"}


pieces = st.sampled_from(
    ['{"a":', "[", "]", "}", ",", "NaN", "-Infinity", "1e999", '"\\ud800"', '"\\udc00x"', '"\\\\u"']
)


@given(st.lists(pieces | st.text(max_size=4), max_size=12).map("".join))
def test_any_text_decodes_or_raises_only_the_documented_errors(params: str) -> None:
    try:
        decoded = decode_inbound(frame(params))
    except (msgspec.DecodeError, msgspec.ValidationError):
        return
    assert isinstance(decoded, RequestFrame)
    try:
        check_params_values("m", decoded.params)
    except GatewayError as exc:
        assert exc.code == INVALID_REQUEST
