"""`clawlane dashboard`: the live dashboard's address, with the gateway token handed over
safely (in the URL's fragment); `--open` opens it in the default browser. The page itself
is served by the gateway (`_http_routes`) and reads `clawlane.*` methods
(`methods._dashboard`)."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path
from typing import Any

from ..access import TOKEN_ENV, local_client_token

__all__ = ["add_dashboard_parser", "dashboard_main", "dashboard_url"]


def dashboard_url(ws_url: str, token: str | None) -> str:
    """The dashboard's address for a gateway at `ws_url`, with the token in the fragment
    (`#token=`): browsers never send a fragment to the server (nor in a Referer), and the
    page stores the token for its own origin and removes it from the address bar."""
    parts = urllib.parse.urlsplit(ws_url)
    scheme = "https" if parts.scheme == "wss" else "http"
    fragment = urllib.parse.urlencode({"token": token}) if token else ""
    return urllib.parse.urlunsplit((scheme, parts.netloc, "/", "", fragment))


def add_dashboard_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dashboard", help="print (or open) the live dashboard's address, token included"
    )
    p.add_argument(
        "--url",
        default=os.environ.get("CLAWLANE_GATEWAY_URL", "ws://127.0.0.1:18789"),
        help="gateway URL (default: $CLAWLANE_GATEWAY_URL or ws://127.0.0.1:18789)",
    )
    p.add_argument(
        "--token",
        default=None,
        help="gateway token (default: $CLAWLANE_GATEWAY_TOKEN, else for a loopback URL the "
        "token file in the state dir)",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where a local gateway keeps its token (default $CLAWLANE_STATE_DIR or .clawlane)",
    )
    p.add_argument("--open", action="store_true", help="open it in the default browser")


def dashboard_main(args: Any) -> int:
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None:
        token = local_client_token(args.url, args.state_dir)
    url = dashboard_url(args.url, token)
    print(url)
    if args.open:
        import webbrowser

        webbrowser.open(url)
    return 0
