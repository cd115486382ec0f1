"""Random texts and transcripts for `sessions_history`'s sanitizing, and OpenClaw 2026.9.6's
own answer for them under Node 24.

`random_texts(seed, count)` draws texts holding credentials of every kind OpenClaw's
redaction knows (vendor tokens, assignments, JSON fields, CLI flags, Authorization and API
key headers, URL userinfo and query values, form bodies, PEM keys, AWS keys, Telegram
tokens...), near misses, shell references, base64 data, invisible and percent-encoded form
keys, amid prose with emoji, CJK and every kind of line break. `random_histories(seed,
count)` draws transcripts of user, assistant and tool result messages (string and block
content, thinking with signatures, tool calls with arguments, images with data, usage, cost,
details, `__openclaw` ids) with long texts around 4,000 UTF-16 units and sizes around a byte
budget, some anchored on a message id.

`openclaw_redact` runs OpenClaw's `redactToolPayloadText` (exported by the dist's
`redact-*.mjs`); `openclaw_history` runs what OpenClaw's `sessions_history` does with
`chat.history`'s messages: its tool module's own internal functions (`sanitizeHistoryMessage`,
`capSessionsHistoryAroundMessage`, `enforceSessionsHistoryHardCap` with the imported
`stripToolMessages` and `capArrayByJsonBytes`: the module's source loaded with an export
added, its imports made absolute), the lines of its `execute` from the selected messages to
the flags, and first the private-data part of `chat.history`'s block projection (the
`sessions_yield` argument, `thinkingSignature`, `openclawReasoningReplay`, and
`projectChatHistoryMediaBlock`, loaded the same way from `chat-display-projection.core`).

Regenerate the recorded table (`tests/data/openclaw-sessions-history-2026.9.6.json`) with
`.venv/bin/python -m tests.runtime.tools._history_cases` (Node 24 and the package needed)."""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from tests.runtime.tools._openclaw_node import PACKAGE, run_node_in

RECORD = Path(__file__).parents[2] / "data" / "openclaw-sessions-history-2026.9.6.json"
ALNUM = string.ascii_letters + string.digits
_PROSE = [
    "hello world",
    "the quick brown fox",
    "日本語のテキスト",
    "emoji 🎉🚀👍🏽 here",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math",
    "café crème",
    "line\nbreak",
    "tab\there",
    "crlf\r\nline",
    "u2028\u2028sep",
    "nbsp\xa0space",
    "zero\u200bwidth",
    "see https://example.com/path?q=1&page=2",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "KEY_NAME is documented",
    "a token of appreciation",
    "password reset link",
    "the secret garden",
    "x=1&y=2",
    "",
]
_SEPARATORS = [" ", "\n", ", ", "\t", "\r\n", "; ", " | ", "'", '"', "&", "?", "=", "\\n", ""]


def _run(rng: random.Random, chars: str, low: int, high: int) -> str:
    return "".join(rng.choice(chars) for _ in range(rng.randint(low, high)))


def _token(rng: random.Random) -> str:
    """A credential-looking value (sometimes too short, sometimes quoted or ending in a
    delimiter)."""
    value = _run(rng, ALNUM + "-_", *rng.choice([(3, 8), (10, 17), (18, 30), (31, 60)]))
    pick = rng.random()
    if pick < 0.15:
        return f'"{value}"'
    if pick < 0.25:
        return f"'{value}'"
    if pick < 0.3:
        return value + rng.choice([",", ";", ")", "}", "]", '"'])
    if pick < 0.33:
        return "***"
    if pick < 0.36:
        return f"${{{value.upper()}}}"
    return value


def _vendor(rng: random.Random) -> str:
    def r(chars: str, low: int, high: int) -> str:
        return _run(rng, chars, low, high)

    lower = string.ascii_lowercase + string.digits
    makers: list[Callable[[], str]] = [
        lambda: "sk-" + r(ALNUM + "-_", 6, 40),
        lambda: "sk-proj-" + r(ALNUM, 20, 48),
        lambda: rng.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + r(ALNUM, 8, 40),
        lambda: "github_pat_" + r(ALNUM + "_", 10, 60),
        lambda: "glpat-" + r(ALNUM + "._=-", 18, 30),
        lambda: "xox" + rng.choice("baprs") + "-" + r(ALNUM + "-", 8, 40),
        lambda: "xapp-" + r(ALNUM + "-", 10, 30),
        lambda: (
            "https://hooks.slack.com/services/T"
            + r("ABC123", 8, 9)
            + "/B"
            + r("XYZ789", 8, 9)
            + "/"
            + r(ALNUM, 20, 26)
        ),
        lambda: (
            "https://discord.com/api/webhooks/"
            + r(string.digits, 18, 18)
            + "/"
            + r(ALNUM + "_-", 60, 70)
        ),
        lambda: "discord token " + r(ALNUM, 24, 24) + "." + r(ALNUM, 6, 6) + "." + r(ALNUM, 27, 27),
        lambda: "gsk_" + r(ALNUM, 10, 40),
        lambda: "AIza" + r(ALNUM + "-_", 18, 40),
        lambda: "ya29." + r(ALNUM + "_-./+=", 10, 40),
        lambda: "1//0" + r(ALNUM, 10, 30),
        lambda: (
            "eyJ"
            + r(ALNUM + "_-", 8, 30)
            + "."
            + r(ALNUM + "_-", 8, 30)
            + "."
            + r(ALNUM + "_-", 8, 30)
        ),
        lambda: (
            rng.choice(["pplx-", "fal_", "bb_live_", "npm_", "pypi-", "hf_", "r8_"])
            + r(ALNUM, 8, 30)
        ),
        lambda: rng.choice(["fc-", "am_", "sk_", "fw-", "fw_", "fpk_"]) + r(ALNUM, 8, 40),
        lambda: rng.choice(["", "x", "_", "/", "-"]) + "gAAAA" + r(ALNUM + "_=-", 18, 40),
        lambda: rng.choice(["sk_live_", "sk_test_", "rk_live_"]) + r(ALNUM, 8, 30),
        lambda: "SG." + r(ALNUM, 10, 22) + "." + r(ALNUM, 10, 43),
        lambda: rng.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + r(lower, 10, 64),
        lambda: "dckr_pat_" + r(ALNUM, 27, 32),
        lambda: "sbp_" + r(lower, 40, 40),
        lambda: rng.choice(["", "x", ";base64,"]) + "dapi" + r("0123456789abcdef", 32, 32),
        lambda: (
            rng.choice(["ATATT", "ATBB", "ATCTT3xFfG"]) + r(ALNUM, 16, 30) + "=" + r(ALNUM, 8, 8)
        ),
        lambda: "xai-" + r(ALNUM, 28, 40),
        lambda: (
            rng.choice(["", " ", "/", "=", ";base64,", ";base64,QUJD"])
            + rng.choice(["AKIA", "ASIA"])
            + r(string.ascii_uppercase + string.digits, 15, 17)
        ),
        lambda: rng.choice(["AKID", "LTAI"]) + r(ALNUM, 10, 20),
        lambda: (
            rng.choice(["bot", "", "x"]) + r(string.digits, 5, 10) + ":" + r(ALNUM + "_-", 18, 40)
        ),
        lambda: "FlyV1 fm2_" + r(ALNUM + "+/=,_-", 100, 120),
        lambda: "tvly-" + r(ALNUM, 10, 20),
    ]
    return rng.choice(makers)()


def _aws_secret(rng: random.Random) -> str:
    value = "".join(rng.choice(ALNUM + "/+=") for _ in range(rng.choice([39, 40, 40, 41])))
    return rng.choice(
        [
            value,
            f"aws_secret_access_key = {value}",
            f'"SecretAccessKey": "{value}"',
            f"https://example.com/{value}",
            f"s3://bucket/{value}@host",
            f"_{value}",
            f"({value})",
            f"https://host:{value}@example.com",
            f"<https://example.com/a?{value}>",
        ]
    )


def _assignment(rng: random.Random) -> str:
    key = rng.choice(
        [
            "OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MY_SECRET", "CARD_NUMBER", "CVV",
            "api_key", "apiKey", "access_token", "auth-token", "client_secret", "password",
            "passwd", "pass", "token", "secret", "jwt", "credential", "private_key",
            "db.password", "app.api-key", "smtp_password", "user-pass", "passphrase",
            "refresh_token", "id_token", "hook_token", "key_material", "authorization",
            "x_api_key", "security_code", "awsSecretAccessKey", "aws_secret_access_key",
            "Token", "PASSWORD", "session", "code", "signature", "sig",
        ]
    )  # fmt: skip
    sep = rng.choice(["=", ": ", " = ", ":", "= ", "=\\", " =\t"])
    token = _token(rng)
    if rng.random() < 0.1:
        token = rng.choice([f"${key.upper()}", f"${{{key.upper()}}}", f"${{{key.upper()}:-x}}"])
    pick = rng.random()
    if pick < 0.2:
        return f'"{key}": "{token.strip(chr(34))}"'
    if pick < 0.3:
        return f"--{key.lower().replace('_', '-')}{rng.choice(['=', ' '])}{token}"
    if pick < 0.35:
        return f"export {key}={token}"
    return f"{key}{sep}{token}"


def _header(rng: random.Random) -> str:
    token = _token(rng)
    return rng.choice(
        [
            f"Authorization: Bearer {token}",
            f"authorization=Bearer {token}",
            f"Authorization: Basic {_run(rng, ALNUM + '+/=', 8, 40)}",
            f"Authorization: Bot {token}",
            f'Authorization: Digest username="{token}", realm="x", nonce="{token}", '
            f'response="{_run(rng, "0123456789abcdef", 32, 32)}"',
            f"Authorization: AWS4-HMAC-SHA256 Credential=AKIA{_run(rng, string.ascii_uppercase, 16, 16)}"
            f"/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, "
            f"Signature={_run(rng, '0123456789abcdef', 64, 64)}",
            f"Proxy-Authorization: Basic {token}",
            f"Authorization: Custom {token}",
            f'{{"Authorization": "Bearer {token}"}}',
            f"Authorization:\\n\\tBearer {token}",
            f"x-api-key: {token}",
            f"X-OpenClaw-Token={token}",
            f"api-key={token}&next=1",
            f"x-goog-api-key: {token}",
            f"Bearer {token}",
            f"cookie: session={token}",
        ]
    )


def _url(rng: random.Random) -> str:
    token = _run(rng, ALNUM, 4, 30)
    return rng.choice(
        [
            f"https://user:{token}@example.com/x",
            f"postgres://admin:{token}@db:5432/app",
            f"mongodb+srv://u:{token}@cluster.example.net",
            f"redis://:{token}@cache:6379",
            f"https://api.example.com/v1?token={token}&page=2",
            f"https://example.com/cb?code={token}#frag",
            f"https://example.com/?access_token={token}&x_amz_signature={token}",
            f"https://example.com/?p%61ssword={token}",
            f"https://example.com/?foo=bar&api-key={token}",
            f"wss://host/socket?session={token}",
        ]
    )


def _form(rng: random.Random) -> str:
    token = _run(rng, ALNUM + "%", 3, 30)
    return rng.choice(
        [
            f"user=bob&password={token}",
            f"grant_type=refresh&refresh_token={token}&scope=x",
            f"body=password={token}",
            f"form: client_secret={token}",
            f"pass\u200bword={token}&x=1",
            f"pa+ss=1&p%61ss={token}",
            f"to\u00adken={token}",
            f"card_number={token}&cvc=123",
            f"a=1&b=2&c={token}",
            f"key={token}",
        ]
    )


def _pem(rng: random.Random) -> str:
    kind = rng.choice(["RSA ", "EC ", "", "ENCRYPTED ", "OPENSSH "])
    body = "\n".join(_run(rng, ALNUM + "+/", 20, 64) for _ in range(rng.randint(1, 4)))
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    pick = rng.random()
    if pick < 0.1:
        return block.replace("BEGIN", "begin")
    if pick < 0.2:
        return block.split("-----END")[0]
    if pick < 0.3:
        return block.replace("\n", "\\n")
    return block


def _secret(rng: random.Random) -> str:
    return rng.choice([_vendor, _aws_secret, _assignment, _header, _url, _form, _pem])(rng)


_FOLDS = {"s": "\u017f", "k": "\u212a", "i": "\u0130", "I": "\u0131", "S": "\u017f"}


def random_text(rng: random.Random, pieces: int | None = None) -> str:
    """Prose and credentials joined by random separators (now and then with letters that
    fold to ASCII ones in Unicode: ſ, K, İ, ı)."""
    parts = []
    for _ in range(pieces if pieces is not None else rng.randint(1, 6)):
        part = _secret(rng) if rng.random() < 0.55 else rng.choice(_PROSE)
        if rng.random() < 0.04:
            part = "".join(_FOLDS.get(c, c) if rng.random() < 0.5 else c for c in part)
        parts += [part, rng.choice(_SEPARATORS)]
    return "".join(parts)


def random_texts(seed: int, count: int) -> list[str]:
    """`count` texts for OpenClaw's redaction (see the module docstring); about one in 300
    over 32,768 UTF-16 units (redacted in chunks) with credentials across chunk borders."""
    rng = random.Random(seed)
    return [chunked_text(rng) if rng.random() < 0.003 else random_text(rng) for _ in range(count)]


def chunked_text(rng: random.Random) -> str:
    """A text over 32,768 UTF-16 units with credentials around 16,384-unit borders."""
    text = long_text(rng, rng.randint(32769, 40000))
    for border in (16384, 32768):
        at = border - rng.randint(0, 30)
        head = text.encode("utf-16-le")[: 2 * at].decode("utf-16-le", "ignore")
        text = head + _secret(rng) + text[len(head) :]
    return text


def long_text(rng: random.Random, units: int) -> str:
    """A text of about `units` UTF-16 units: prose, emoji (surrogate pairs) and a few
    credentials, some of them near the 4,000-unit cut."""
    parts: list[str] = []
    size = 0
    while size < units:
        pick = rng.random()
        piece = (
            _secret(rng)
            if pick < 0.08
            else rng.choice(["🎉", "👍🏽", "𝔘", "é", "日本"])
            if pick < 0.4
            else rng.choice(_PROSE) + " "
        )
        parts.append(piece)
        size += len(piece.encode("utf-16-le")) // 2
    text = "".join(parts)
    # land a surrogate pair or a credential right at the cut now and then
    if rng.random() < 0.3:
        cut = rng.randint(3990, 4005)
        head = text.encode("utf-16-le")[: 2 * cut].decode("utf-16-le", "ignore")
        text = head + rng.choice(["🎉", "👍🏽🎉", _secret(rng)]) + text[len(head) :]
    return text


def _text_value(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.12:
        return long_text(rng, rng.choice([3990, 3999, 4000, 4001, 4010, 4500]))
    if pick < 0.16:
        return "🎉" * rng.randint(1995, 2005)
    return random_text(rng)


def _block(rng: random.Random, role: str) -> Any:
    pick = rng.random()
    if pick < 0.35:
        return {"type": "text", "text": _text_value(rng)}
    if pick < 0.5 and role == "assistant":
        block: dict[str, Any] = {"type": "thinking", "thinking": _text_value(rng)}
        if rng.random() < 0.7:
            block["thinkingSignature"] = _run(rng, ALNUM, 20, 80)
        if rng.random() < 0.2:
            block["redacted"] = rng.random() < 0.5
        return block
    if pick < 0.68 and role == "assistant":
        name = rng.choice(["exec", "read", "sessions_yield", "web_fetch"])
        arguments: Any = {"command": random_text(rng), "n": rng.choice([1, 2.5, 1e21, 1.5e-7])}
        if name == "sessions_yield":
            arguments = {"message": random_text(rng), "sessionKey": "agent:main:main"}
        if rng.random() < 0.1:
            arguments = "x" * rng.randint(4000, 6000)
        call = {"type": "toolCall", "id": f"call_{rng.randrange(10**6)}", "name": name}
        call["arguments"] = arguments
        if rng.random() < 0.2:
            call["partialJson"] = json.dumps(arguments)
        return call
    if pick < 0.8:
        image: dict[str, Any] = {"type": rng.choice(["image", "image", "audio", "video"])}
        image["mimeType"] = "image/png"
        if rng.random() < 0.9:
            image["data"] = _run(rng, ALNUM + "+/", 4, 400) + rng.choice(["", "=", "==", " \n"])
        if rng.random() < 0.2:
            image["source"] = {"type": "base64", "data": _run(rng, ALNUM, 4, 40)}
        if rng.random() < 0.1:
            image["path"] = "/tmp/x.png"
        return image
    if pick < 0.84:
        return {"type": "attachment", "attachment": {"name": "a.txt", "path": "/tmp/a.txt"}}
    if pick < 0.87:
        return rng.choice(["a string block", 7, None, ["x", {"text": "sk-" + "a" * 20}]])
    return {"type": "text", "text": _text_value(rng), "textSignature": "sig"}


def random_message(rng: random.Random, seq: int) -> Any:
    role = rng.choice(["user", "assistant", "assistant", "toolResult", "tool"])
    message: dict[str, Any] = {"role": role}
    if rng.random() < 0.3 and role != "assistant":
        message["content"] = _text_value(rng)
    else:
        message["content"] = [_block(rng, role) for _ in range(rng.randint(0, 4))]
    if role in ("toolResult", "tool"):
        message["toolCallId"] = f"call_{seq}"
        message["toolName"] = "exec"
        if rng.random() < 0.5:
            message["details"] = {"exitCode": 0, "output": random_text(rng)}
        message["isError"] = rng.random() < 0.2
    if role == "assistant" and rng.random() < 0.6:
        message["usage"] = {"input": 10, "output": 5, "cost": {"total": 0.0012}}
        message["stopReason"] = "stop"
    if rng.random() < 0.1:
        message["cost"] = 0.5
    if rng.random() < 0.1:
        message["text"] = _text_value(rng)
    message["timestamp"] = 1760000000000 + seq
    if rng.random() < 0.9:
        message["__openclaw"] = {"id": f"m{seq}", "seq": seq}
    if rng.random() < 0.05:
        return rng.choice(["not a message", None, 3])
    return message


def random_histories(seed: int, count: int) -> list[dict[str, Any]]:
    """`count` cases `{messages, includeTools, messageId, maxBytes}`."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        messages = [random_message(rng, seq) for seq in range(1, rng.randint(0, 14) + 1)]
        anchored = rng.random() < 0.3 and messages
        anchor = f"m{rng.randint(1, len(messages) + 1)}" if anchored else None
        cases.append(
            {
                "messages": messages,
                "includeTools": rng.random() < 0.5,
                "messageId": anchor,
                "maxBytes": rng.choice([81920, rng.randint(200, 30000), rng.randint(30, 400)]),
            }
        )
    return cases


def _dist(glob: str, needle: str) -> Path:
    for module in sorted((PACKAGE / "dist").glob(glob)):
        if needle in module.read_text():
            return module
    raise FileNotFoundError(f"no {glob} with {needle!r}")


_SCRIPT = """
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dist, toolsModule, coreModule, helpersModule, redactModule, input, workdir] = %s;
async function load(path, exports, name) {
  const base = pathToFileURL(dist).href + "/";
  const source = readFileSync(path, "utf8")
    .replace(/((?:from|import)\\s*\\(?\\s*)"\\.\\//g, (_, head) => `${head}"${base}`)
    + `\\nexport { ${exports} };\\n`;
  const file = `${workdir}/dist/${name}.mjs`;
  writeFileSync(file, source);
  return await import(pathToFileURL(file).href);
}
const T = await load(toolsModule, "sanitizeHistoryMessage as __m, capSessionsHistoryAroundMessage as __a, "
  + "enforceSessionsHistoryHardCap as __h, capArrayByJsonBytes as __c, stripToolMessages as __s", "tools");
const C = await load(coreModule, "projectChatHistoryMediaBlock as __media", "core");
const H = await import(pathToFileURL(helpersModule).href);
const stripPrivate = H._;
const R = await import(pathToFileURL(redactModule).href);
function project(block) {
  if (!block || typeof block !== "object") return block;
  const entry = { ...block };
  stripPrivate(entry);
  delete entry.thinkingSignature;
  delete entry.openclawReasoningReplay;
  C.__media(entry);
  if (entry.type === "attachment" && entry.attachment && typeof entry.attachment === "object") {
    const projected = { ...entry.attachment };
    for (const f of ["data", "blob", "path", "file", "filePath", "localPath"]) delete projected[f];
    entry.attachment = projected;
  }
  return entry;
}
function view({ messages, includeTools, messageId, maxBytes }) {
  const rawMessages = messages.map((m) => m && typeof m === "object" && Array.isArray(m.content)
    ? { ...m, content: m.content.map(project) } : m);
  const transcriptBudget = maxBytes;
  const selectedMessages = includeTools ? rawMessages : T.__s(rawMessages);
  const sanitizedMessages = selectedMessages.map((message) => T.__m(message));
  const contentTruncated = sanitizedMessages.some((entry) => entry.truncated);
  const contentRedacted = sanitizedMessages.some((entry) => entry.redacted);
  const sanitizedItems = sanitizedMessages.map((entry) => entry.message);
  const cappedMessages = messageId ? T.__a(sanitizedItems, messageId, transcriptBudget) : T.__c(sanitizedItems, transcriptBudget);
  const droppedMessages = cappedMessages.items.length < selectedMessages.length;
  const hardened = T.__h({ items: cappedMessages.items, bytes: cappedMessages.bytes, maxBytes: transcriptBudget });
  return {
    messages: hardened.items,
    truncated: droppedMessages || contentTruncated || hardened.hardCapped,
    droppedMessages: droppedMessages || hardened.hardCapped,
    contentTruncated,
    contentRedacted,
    bytes: hardened.bytes,
  };
}
const { texts, histories } = JSON.parse(readFileSync(input, "utf8"));
process.stdout.write(JSON.stringify({
  texts: texts.map((text) => R.b(text)),
  histories: histories.map(view),
}));
"""


async def openclaw_answers(
    workdir: Path, texts: list[str], histories: list[dict[str, Any]]
) -> dict[str, list[Any]]:
    """OpenClaw's redaction of `texts` and its `sessions_history` view of `histories`."""
    data = workdir / "cases.json"
    data.write_text(json.dumps({"texts": texts, "histories": histories}))
    modules = [
        str(PACKAGE / "dist"),
        str(_dist("openclaw-tools-*.mjs", "function sanitizeHistoryMessage")),
        str(_dist("chat-display-projection.core-*.mjs", "function projectChatHistoryMediaBlock")),
        str(
            _dist(
                "chat-display-projection.helpers-*.mjs",
                "stripPrivateToolCallContextForDisplay as _",
            )
        ),
        str(_dist("redact-*.mjs", "redactToolPayloadText as b")),
        str(data),
        str(workdir),
    ]
    # HOME without an OpenClaw config: the default logging redaction, as a gateway without
    # `logging.redactPatterns`
    answers: dict[str, list[Any]] = await run_node_in(
        workdir, "history.mjs", _SCRIPT % json.dumps(modules), timeout_s=600
    )
    return answers


RECORD_SEED, TEXT_COUNT, HISTORY_COUNT = 2026_09_06, 1500, 120


async def _record() -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="clawlane-history-") as tmp:
        texts = random_texts(RECORD_SEED, TEXT_COUNT)
        histories = random_histories(RECORD_SEED, HISTORY_COUNT)
        answers = await openclaw_answers(Path(tmp), texts, histories)
    body = {
        "openclaw": "2026.9.6",
        "what": "redactToolPayloadText(text) and sessions_history's view of chat.history's "
        "messages (tests/runtime/tools/_history_cases.py)",
        "texts": [{"text": t, "redacted": r} for t, r in zip(texts, answers["texts"], strict=True)],
        "histories": [
            {**case, "view": view}
            for case, view in zip(histories, answers["histories"], strict=True)
        ],
    }
    RECORD.write_text(json.dumps(body, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} texts and {len(histories)} histories to {RECORD}")


if __name__ == "__main__":
    sys.exit(trio.run(_record))
