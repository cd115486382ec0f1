"""Tool Search's ranking and compact input signatures, as OpenClaw's Tool Search has them.

Ranking (`LexicalIndex`): Okapi BM25 (k1 1.2, b 0.75) over each catalog entry's name, id,
description and parameter names and descriptions. Words are split on anything that is not a
letter, digit or `_` (a `snake_case` or `camelCase` word also gives its parts), lower-cased,
common English stopwords dropped, and cut to a light stem ("scheduling" and "schedule" meet;
"running" and "run" meet). A query also gets a few intent words at a weight of 0.35 ("look
up the price" adds `search` and `web`): a hit that shares a word the caller typed ranks
before one that matched only those. An empty query ranks nothing.

`input_signature(schema)`: a JSON Schema object as a short TypeScript-style signature,
`{ path: string; limit?: number /* integer, >= 1 */ }`, required keys first then the
optional ones, each alphabetically, at most 16 of them and 300 characters; a schema it
cannot render (or that is too big) is `unknown`, so the model asks `tool_describe`.

Pure functions and frozen data; nothing here blocks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Generic, TypeVar

from attrs import frozen

__all__ = ["LexicalIndex", "input_signature", "parameter_text", "query_terms", "tokenize"]

_V = TypeVar("_V")

_K1: Final = 1.2
_B: Final = 0.75
_EXPANSION_WEIGHT: Final = 0.35

_STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "for",
        "from",
        "had",
        "has",
        "have",
        "here",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "up",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)

# Query words (singular) → capability words tool descriptions use. Generic words only.
_EXPANSIONS: Final[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = (
    (("look", "lookup", "google", "research"), ("search", "web", "find")),
    (
        ("current", "today", "latest", "now", "recent", "news", "price", "weather"),
        ("search", "web"),
    ),
    (("url", "link", "page", "article", "site", "website"), ("fetch", "web", "browse")),
    (
        ("remember", "recall", "memory", "earlier", "previously", "discussed", "decided"),
        ("memory", "recall", "history"),
    ),
    (
        ("remind", "reminder", "later", "tomorrow", "daily", "weekly", "recurring"),
        ("schedule", "automations", "cron", "reminder"),
    ),
    (("say", "tell", "reply", "respond", "answer"), ("message", "send")),
    (("picture", "photo", "meme", "screenshot"), ("image",)),
    (("speak", "say", "voice"), ("audio", "speech")),
    (("run", "execute", "command", "shell", "terminal"), ("exec", "process")),
    (("directory", "folder", "path"), ("file", "list")),
)

# Words ending in `s` that are not plurals ("news" is not "new").
_NOT_PLURAL: Final = frozenset(
    [
        "news",
        "status",
        "alias",
        "canvas",
        "focus",
        "bonus",
        "virus",
        "atlas",
        "lens",
        "axis",
        "basis",
        "analysis",
        "gas",
        "bus",
        "plus",
    ]
)
_SUFFIXES: Final = ("ies", "ing", "ed", "ly", "es", "er", "s", "e")
_UNDOUBLE_AFTER: Final = frozenset({"ing", "ed", "er"})
_KEEP_DOUBLE: Final = frozenset("lsfz")

_WORD_PARTS = re.compile(r"[A-Z]+s?(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _strip_suffix(token: str) -> str:
    if len(token) <= 3 or token in _NOT_PLURAL:
        return token
    for suffix in _SUFFIXES:
        if not token.endswith(suffix) or len(token) - len(suffix) < 3:
            continue
        if suffix == "s" and token.endswith("ss"):
            continue
        if suffix == "ies":
            return token[:-3] + "y"
        stripped = token[: -len(suffix)]
        if suffix in _UNDOUBLE_AFTER:
            last = stripped[-1]
            if (
                len(stripped) > 3
                and last == stripped[-2]
                and last not in _KEEP_DOUBLE
                and last not in "aeiou"
            ):
                stripped = stripped[:-1]
        return stripped
    return token


def _stem(token: str) -> str:
    current = token
    for _ in range(3):
        following = _strip_suffix(current)
        if following == current:
            break
        current = following
    return current


def _stems(word: str) -> list[str]:
    """`-ies` is ambiguous (policies, cookies): both readings."""
    if len(word) > 4 and word.endswith("ies"):
        return [word[:-3] + "y", _stem(word[:-3] + "ie")]
    return [_stem(word)]


def _words(text: str) -> list[str]:
    out: list[str] = []
    for raw in re.split(r"[^\w]+", text):
        if not raw:
            continue
        out.append(raw.lower())
        parts = [p.lower() for piece in raw.split("_") for p in _WORD_PARTS.findall(piece) if p]
        if len(parts) >= 2:
            out.extend(parts)
    return out


def tokenize(text: str) -> list[str]:
    """The indexed terms of a document: words, their parts, stopwords dropped, stemmed."""
    return [s for w in _words(text) if w not in _STOPWORDS for s in _stems(w)]


def _trigger(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


_NORMALIZED_EXPANSIONS: Final = tuple(
    (frozenset(_trigger(t) for t in triggers), tuple(_stem(a) for a in adds))
    for triggers, adds in _EXPANSIONS
)


def query_terms(query: str) -> dict[str, float]:
    """A query's terms and their weights: typed words 1, intent words 0.35."""
    words = [w for w in _words(query) if w not in _STOPWORDS]
    weights = {s: 1.0 for w in words for s in _stems(w)}
    triggers = {_trigger(w) for w in words}
    for group, adds in _NORMALIZED_EXPANSIONS:
        if group & triggers:
            for add in adds:
                weights[add] = max(weights.get(add, 0.0), _EXPANSION_WEIGHT)
    return weights


@frozen
class LexicalIndex(Generic[_V]):
    """A BM25 index of documents (value, text); `rank` scores them for a query."""

    values: tuple[_V, ...]
    lengths: tuple[int, ...]
    postings: Mapping[str, Mapping[int, int]]
    average_length: float

    @classmethod
    def build(cls, documents: Iterable[tuple[_V, str]]) -> LexicalIndex[_V]:
        values: list[_V] = []
        lengths: list[int] = []
        postings: dict[str, dict[int, int]] = {}
        for position, (value, text) in enumerate(documents):
            terms = tokenize(text)
            values.append(value)
            lengths.append(len(terms))
            for term in terms:
                counts = postings.setdefault(term, {})
                counts[position] = counts.get(position, 0) + 1
        average = sum(lengths) / len(lengths) if lengths else 0.0
        return cls(tuple(values), tuple(lengths), postings, average)

    def rank(self, query: str) -> list[tuple[_V, float, bool]]:
        """(value, score, whether it shares a typed word) of each matching document, best
        first: typed-word hits before intent-only ones, then by score, then in index order."""
        terms = query_terms(query)
        total = len(self.values)
        if not terms or total == 0:
            return []
        scores: dict[int, list[float | bool]] = {}
        for term, weight in terms.items():
            matches = self.postings.get(term)
            if not matches:
                continue
            idf = math.log(1 + (total - len(matches) + 0.5) / (len(matches) + 0.5))
            for position, frequency in matches.items():
                slot = scores.setdefault(position, [0.0, False])
                norm = self.lengths[position] / self.average_length if self.average_length else 1
                slot[0] = float(slot[0]) + weight * (idf * frequency * (_K1 + 1)) / (
                    frequency + _K1 * (1 - _B + _B * norm)
                )
                if weight >= 1:
                    slot[1] = True
        ranked = sorted(
            ((p, float(s[0]), bool(s[1])) for p, s in scores.items() if float(s[0]) > 0),
            key=lambda item: (not item[2], -item[1], item[0]),
        )
        return [(self.values[p], score, literal) for p, score, literal in ranked]


def parameter_text(schema: Any, depth: int = 0) -> str:
    """The property names and descriptions of a JSON Schema, for the index."""
    parts: list[str] = []
    _collect(schema, depth, parts)
    return " ".join(parts)


def _collect(schema: Any, depth: int, parts: list[str]) -> None:
    if depth > 4 or not isinstance(schema, dict):
        return
    description = schema.get("description")
    if isinstance(description, str) and description:
        parts.append(description)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, child in properties.items():
            parts.append(str(name))
            _collect(child, depth + 1, parts)
    if "items" in schema:
        _collect(schema["items"], depth + 1, parts)


# --- compact input signatures ----------------------------------------------------------------

_MAX_CHARS: Final = 300
_MAX_PROPERTIES: Final = 16
_MAX_DEPTH: Final = 4
_MAX_UNION: Final = 5
_MAX_ENUM: Final = 8
_MAX_ENUM_CHARS: Final = 96
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_BOUNDS: Final = (
    ("minimum", ">="),
    ("maximum", "<="),
    ("exclusiveMinimum", ">"),
    ("exclusiveMaximum", "<"),
)
_UNKNOWN: Final = "unknown"


def _literal(value: Any) -> str | None:
    if value is None or isinstance(value, (str, bool)):
        return _json(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return _json(value)
    return None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _literals(values: Any) -> str | None:
    if not isinstance(values, list) or not values or len(values) > _MAX_ENUM:
        return None
    rendered = [_literal(v) for v in values]
    if any(r is None for r in rendered):
        return None
    text = " | ".join(dict.fromkeys(r for r in rendered if r is not None))
    return text if len(text) <= _MAX_ENUM_CHARS else None


def _type(schema: Any, depth: int) -> tuple[str, bool]:
    """(signature, complete) of one schema node."""
    if not isinstance(schema, dict):
        return _UNKNOWN, False
    if not schema:
        return "unknown", True
    if depth >= _MAX_DEPTH:
        return _UNKNOWN, False
    variants = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(variants, list):
        consts = [v.get("const", ...) if isinstance(v, dict) else ... for v in variants]
        if consts and all(c is not ... for c in consts):
            literal = _literals(consts)
            if literal is not None:
                return literal, True
        if not variants or len(variants) > _MAX_UNION:
            return _UNKNOWN, False
        parts = [_type(v, depth + 1) for v in variants]
        if not all(complete for _, complete in parts):
            return _UNKNOWN, False
        return " | ".join(dict.fromkeys(text for text, _ in parts)), True
    literal = _literal(schema["const"]) if "const" in schema else None
    if literal is not None:
        return literal, True
    enum = _literals(schema.get("enum"))
    if enum is not None:
        return enum, True
    kind = schema.get("type")
    if isinstance(kind, list):
        if not kind or len(kind) > _MAX_UNION:
            return _UNKNOWN, False
        parts = [_type({**schema, "type": k}, depth + 1) for k in kind]
        if not all(complete for _, complete in parts):
            return _UNKNOWN, False
        return " | ".join(dict.fromkeys(text for text, _ in parts)), True
    if kind in ("integer", "number"):
        notes = ["integer"] if kind == "integer" else []
        notes += [f"{op} {schema[key]}" for key, op in _BOUNDS if key in schema]
        return "number" + (f" /* {', '.join(notes)} */" if notes else ""), True
    if kind == "array":
        text, complete = _type(schema.get("items"), depth + 1)
        return f"Array<{text}>", complete
    if kind == "object":
        return _object(schema, depth + 1)
    if kind in ("string", "boolean", "null"):
        return str(kind), True
    return _UNKNOWN, False


def _object(schema: Mapping[str, Any], depth: int) -> tuple[str, bool]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        closed = schema.get("additionalProperties") is False
        return ("{}", True) if closed else ("{ ... }", False)
    required = [k for k in schema.get("required", ()) if isinstance(k, str) and k in properties]
    optional = sorted(k for k in properties if k not in required)
    keys = sorted(required)[:_MAX_PROPERTIES]
    keys += optional[: _MAX_PROPERTIES - len(keys)]
    omitted = len(keys) < len(properties) or schema.get("additionalProperties") not in (
        False,
        None,
    )
    complete = not omitted
    body = ""
    for key in keys:
        name = key if _IDENT.match(key) else _json(key)
        text, part_complete = _type(properties[key], depth)
        complete = complete and part_complete
        part = f"{name}{'' if key in required else '?'}: {text}"
        following = f"{body}; {part}" if body else part
        if len(following) + 4 > _MAX_CHARS:
            omitted, complete = True, False
            break
        body = following
    if not body:
        return ("{}", complete) if not keys and not omitted else ("{ ... }", False)
    return f"{{ {body}{'; ...' if omitted else ''} }}", complete


def input_signature(schema: Any) -> str:
    """A tool's parameters as a compact signature (see the module docstring)."""
    if not isinstance(schema, dict):
        return _UNKNOWN
    text, _complete = _object(schema, 0) if schema.get("type") == "object" else _type(schema, 0)
    return text if len(text) <= _MAX_CHARS else _UNKNOWN
