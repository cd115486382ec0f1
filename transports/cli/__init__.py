"""The `clawlane` command line: `main(argv)`.

- `_main`: the argparse tree and each command: `gateway` (serve), the client commands
  (`agent`, `call`, `status`, `health`, `sessions`, `models`, `logs`, ...), `config`,
  `dashboard`, `loadtest`, `completion`. Each command imports what it needs when it runs,
  so a client command loads the client, not the gateway.
- `_config`: `config validate` and `config schema`, offline.
- `_dashboard`: the dashboard's address with the token handed over.
- `_tables`: human-readable views of the gateway's answers.
- `_completion`: shell completion generated from the parser itself.
"""

from ._main import main as main

__all__ = [
    "main",
]
