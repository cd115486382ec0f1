"""clawlane's version: what `hello-ok.server.version` and `clawlane --version` report.

A module of its own so that `clawlane --version` reads it without loading the gateway.
"""

from __future__ import annotations

from typing import Final

VERSION: Final = "0.1.0"
