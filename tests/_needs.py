"""What a test does when a service or tool it needs is missing: under CI (`CI=true`) it fails,
so that a broken CI machine cannot pass by skipping; elsewhere it skips, saying why.

The services are PostgreSQL, Redis and redis-server, Chromium (with Playwright) and a
tmpfs mount (root); `.ci/run` installs and starts them. A skip for any other reason (a shell
that is not installed, a platform without private mount namespaces) stays a plain skip."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (`CI=true`, as CI systems set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def missing(what: str, why: str) -> NoReturn:
    """`what` (a service or tool) is missing for `why`: fail under CI, else skip."""
    message = f"{what} is missing: {why}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: a missing service fails the test)", pytrace=False)
    pytest.skip(message)
