"""Who may reach the gateway before any method runs: auth settings, admission limits, origins.

- `_auth`: `AuthSettings` (`gateway.auth.mode` none | token | password, the token a first
  start creates in the state dir, the loopback rule: a non-loopback bind needs a secret).
- `_admission`: the limits OpenClaw sets before a client is authenticated: unauthenticated
  sockets per address (`PreauthSlot`), failed-auth rate limits (`AuthRateLimiter`) per scope.
- `_origins`: one pure decision for browser origins (`check_origin`), and `Peer`, where a
  connection or an HTTP request comes from.

All of it is pure or in-memory: no sockets, no methods.

The security model in one place (as OpenClaw's gateway does it, its error codes, messages
and close codes included; the `connect` admission that applies it is
`transports.server._handshake`):

- **Token by default** (`_auth`): a wrong or missing token is refused (`AUTH_TOKEN_MISMATCH`
  / `AUTH_TOKEN_MISSING`, close 1008).
- **Scopes** are exactly the ones a `connect` asks for (`runtime.protocol._scopes` says what
  each satisfies). A client with the token but no device identity is admitted with no
  scopes, except `cli`/`cli` and `gateway-client`/`backend` clients on loopback (OpenClaw's
  one-shot commands); with no token and no device it is asked for one (`NOT_PAIRED`). With
  `auth.mode: "none"` a client without a device keeps its requested scopes.
- **Devices** (`runtime.devices`): a client may sign the `connect.challenge` nonce with an
  ed25519 key; the terminal UI and the Control UI must. A new device (or one asking for a new
  role or more scopes) is paired silently over direct loopback; from elsewhere the connect
  fails `NOT_PAIRED` / `PAIRING_REQUIRED` with a `requestId` until an operator with
  `operator.pairing` approves it (`openclaw devices approve <id>`, `device.pair.approve`;
  requests expire after 5 minutes). A paired device gets `hello-ok.auth.deviceToken`, usable
  instead of the shared token; `device.token.rotate` / `revoke` replace or end it.
- **Browser origins** (`_origins`): an upgrade or HTTP request carrying an `Origin` is refused
  with HTTP 403 unless it is the gateway's own origin or listed in
  `gateway.controlUi.allowedOrigins` (`"*"` allows all); the list is read live.
- **Before authentication** (`_admission`): 32 unauthenticated sockets per address (HTTP and
  WebSocket share them; beyond: 503); 10 failed authentications in 60 s lock an address out
  for 5 minutes (`AUTH_RATE_LIMITED`, `gateway.auth.rateLimit`); loopback is answered later
  instead (250 ms doubling to 5 s), browser origins on loopback are counted per origin and
  locked out. Frame and request sizes are `runtime.protocol`'s.
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
