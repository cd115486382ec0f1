"""Who may reach the gateway before any method runs: auth settings, admission limits, origins.

- `_auth`: `AuthSettings` (`gateway.auth.mode` none | token | password, the token a first
  start creates in the state dir, the loopback rule: a non-loopback bind needs a secret).
- `_admission`: the limits OpenClaw sets before a client is authenticated: unauthenticated
  sockets per address (`PreauthSlot`), failed-auth rate limits (`AuthRateLimiter`) per scope.
- `_origins`: one pure decision for browser origins (`check_origin`), and `Peer`, where a
  connection or an HTTP request comes from.

All of it is pure or in-memory: no sockets, no methods.
"""

from ._admission import DEFAULT_MAX_PREAUTH_PER_ADDRESS as DEFAULT_MAX_PREAUTH_PER_ADDRESS
from ._admission import SCOPE_DEVICE_TOKEN as SCOPE_DEVICE_TOKEN
from ._admission import SCOPE_SHARED_SECRET as SCOPE_SHARED_SECRET
from ._admission import AuthRateLimiter as AuthRateLimiter
from ._admission import PreauthBudget as PreauthBudget
from ._admission import PreauthSlot as PreauthSlot
from ._admission import browser_origin_key as browser_origin_key
from ._admission import http_refusal as http_refusal
from ._admission import is_loopback_address as is_loopback_address
from ._auth import TOKEN_ENV as TOKEN_ENV
from ._auth import TOKEN_FILENAME as TOKEN_FILENAME
from ._auth import AuthConfigError as AuthConfigError
from ._auth import AuthSettings as AuthSettings
from ._auth import auth_settings as auth_settings
from ._auth import is_loopback as is_loopback
from ._auth import local_client_token as local_client_token
from ._auth import read_token_file as read_token_file
from ._auth import token_path as token_path
from ._origins import ORIGIN_NOT_ALLOWED_MESSAGE as ORIGIN_NOT_ALLOWED_MESSAGE
from ._origins import Peer as Peer
from ._origins import check_origin as check_origin

__all__ = [
    "DEFAULT_MAX_PREAUTH_PER_ADDRESS",
    "ORIGIN_NOT_ALLOWED_MESSAGE",
    "SCOPE_DEVICE_TOKEN",
    "SCOPE_SHARED_SECRET",
    "TOKEN_ENV",
    "TOKEN_FILENAME",
    "AuthConfigError",
    "AuthRateLimiter",
    "AuthSettings",
    "Peer",
    "PreauthBudget",
    "PreauthSlot",
    "auth_settings",
    "browser_origin_key",
    "check_origin",
    "http_refusal",
    "is_loopback",
    "is_loopback_address",
    "local_client_token",
    "read_token_file",
    "token_path",
]
