"""The ids of background jobs, as OpenClaw 2026.9.6 makes them (`createSessionSlug` of
src/agents/session-slug.ts): a readable slug, `<adjective>-<noun>` (`swift-reef`); when it is
taken, the same numbered (`swift-reef-2` to `-12`), twelve bases tried; then three words
(`calm-cove-otter`, likewise); then three words and three random letters or digits, and the
time in base 36 after it should that be taken too. `is_taken` says whether an id is in use
(a job of this node, or as far as this node knows of another's: `ProcessRegistry`)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["SLUG_ADJECTIVES", "SLUG_NOUNS", "session_slug"]

SLUG_ADJECTIVES: Final = [
    "amber",
    "briny",
    "brisk",
    "calm",
    "clear",
    "cool",
    "crisp",
    "dawn",
    "delta",
    "ember",
    "faint",
    "fast",
    "fresh",
    "gentle",
    "glow",
    "good",
    "grand",
    "keen",
    "kind",
    "lucky",
    "marine",
    "mellow",
    "mild",
    "neat",
    "nimble",
    "nova",
    "oceanic",
    "plaid",
    "quick",
    "quiet",
    "rapid",
    "salty",
    "sharp",
    "swift",
    "tender",
    "tidal",
    "tidy",
    "tide",
    "vivid",
    "warm",
    "wild",
    "young",
]
SLUG_NOUNS: Final = [
    "atlas",
    "basil",
    "bison",
    "bloom",
    "breeze",
    "canyon",
    "cedar",
    "claw",
    "cloud",
    "comet",
    "coral",
    "cove",
    "crest",
    "crustacean",
    "daisy",
    "dune",
    "ember",
    "falcon",
    "fjord",
    "forest",
    "glade",
    "gulf",
    "harbor",
    "haven",
    "kelp",
    "lagoon",
    "lobster",
    "meadow",
    "mist",
    "nudibranch",
    "nexus",
    "ocean",
    "orbit",
    "otter",
    "pine",
    "prairie",
    "reef",
    "ridge",
    "river",
    "rook",
    "sable",
    "sage",
    "seaslug",
    "shell",
    "shoal",
    "shore",
    "slug",
    "summit",
    "tidepool",
    "trail",
    "valley",
    "wharf",
    "willow",
    "zephyr",
]
_FALLBACK_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz0123456789"
_ATTEMPTS: Final = 12


def _choice(values: Sequence[str]) -> str:
    return values[secrets.randbelow(len(values))]


def _base(words: int) -> str:
    parts = [_choice(SLUG_ADJECTIVES), _choice(SLUG_NOUNS)]
    if words > 2:
        parts.append(_choice(SLUG_NOUNS))
    return "-".join(parts)


def _available(words: int, is_taken: Callable[[str], bool]) -> str | None:
    for _ in range(_ATTEMPTS):
        base = _base(words)
        if not is_taken(base):
            return base
        for i in range(2, 13):
            candidate = f"{base}-{i}"
            if not is_taken(candidate):
                return candidate
    return None


def _base36(n: int) -> str:
    """`n` in base 36, as JavaScript's `toString(36)` writes it."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def session_slug(is_taken: Callable[[str], bool] = lambda _: False) -> str:
    """A new id no `is_taken` (see the module docstring). Not a checkpoint."""
    found = _available(2, is_taken) or _available(3, is_taken)
    if found is not None:
        return found
    suffix = "".join(_choice(_FALLBACK_ALPHABET) for _ in range(3))
    fallback = f"{_base(3)}-{suffix}"
    return f"{fallback}-{_base36(int(time.time() * 1000))}" if is_taken(fallback) else fallback
