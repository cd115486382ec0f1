#!/usr/bin/env python3
"""`clawlane loadtest` from a checkout: `.venv/bin/python scripts/loadtest.py --spawn ...`.

The tool itself is `transports.loadtest._run` (`run_loadtest` for use from Python).
"""

from __future__ import annotations

import sys

from transports import main

if __name__ == "__main__":
    sys.exit(main(["loadtest", *sys.argv[1:]]))
