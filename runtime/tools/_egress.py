"""Which network addresses a tool may reach: the SSRF guard of `web_fetch`.

A target passes in two steps, both before any connection is made:

1. Its host name. A name on `blocked_hostnames` (exact, or `*.example.com` for the subdomains)
   is refused first, whatever else is configured. Then, unless the name is on
   `allowed_hostnames` (exact) or `allow_private_network` is set, the names that always mean
   the local machine or a cloud's metadata service (`localhost`, `*.localhost`, `*.local`,
   `*.internal`, `metadata.google.internal`) are refused, and so is an IP literal in a
   non-public range, or an IPv4 literal in a legacy form (`2130706433`, `0x7f.1`, `127.1`).
2. Every address the name resolves to (`resolve_pinned`). One non-public address refuses the
   whole name, so a DNS answer that mixes a public and a private address does not get through.
   A name on `allowed_hostnames` may resolve to private addresses, but never to the unspecified
   address or a link-local one (the metadata services live there), and to loopback only when
   the name itself says loopback (`localhost`, `*.localhost`, a loopback literal).

The caller connects to the address `resolve_pinned` returned, not to the name again, so a
second DNS answer (rebinding) cannot change where the connection goes; each redirect hop is a
new target and is checked the same way.

Non-public means not globally routable (`ipaddress`'s `is_global` is false: private,
loopback, link-local, shared 100.64/10, benchmark 198.18/15, documentation, reserved) or
multicast; IPv6 addresses that embed an IPv4 address (mapped, 6to4, Teredo, NAT64 64:ff9b::/96)
are judged by that address. `allow_rfc2544_benchmark_range` lets 198.18.0.0/15 through and
`allow_ipv6_unique_local_range` fc00::/7 (for trusted fake-IP proxies).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence

import trio
from attrs import field, frozen

from ._errors import EgressBlockedError

__all__ = ["EgressPolicy", "PinnedTarget", "check_hostname", "is_public_address", "resolve_pinned"]

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_ALWAYS_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "metadata.google.internal"})
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal")
_BENCHMARK = ipaddress.ip_network("198.18.0.0/15")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LEGACY_IPV4 = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}\.?$")

# OpenClaw's words (its SSRF guard's), without the host: the model has the URL it asked for.
BLOCKED_NAME_MESSAGE = "Blocked hostname or private/internal/special-use IP address"
BLOCKED_ADDRESS_MESSAGE = "Blocked: resolves to private/internal/special-use IP address"


def normalize_hostname(name: str) -> str:
    """Lower case, without IPv6 brackets and without one trailing dot."""
    host = name.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.removesuffix(".")


def _names(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(n for n in (normalize_hostname(v) for v in values) if n)


@frozen
class EgressPolicy:
    """`tools.web.fetch.ssrfPolicy`, normalized. The default refuses every non-public target."""

    allowed_hostnames: tuple[str, ...] = field(default=(), converter=_names)
    blocked_hostnames: tuple[str, ...] = field(default=(), converter=_names)
    allow_private_network: bool = False
    allow_rfc2544_benchmark_range: bool = False
    allow_ipv6_unique_local_range: bool = False

    def is_blocked_name(self, host: str) -> bool:
        """Whether `host` (normalized) is on the configured block list."""
        for pattern in self.blocked_hostnames:
            if pattern.startswith("*."):
                suffix = pattern[2:]
                if suffix and host != suffix and host.endswith("." + suffix):
                    return True
            elif host == pattern:
                return True
        return False

    def trusts(self, host: str) -> bool:
        """Whether `host` (normalized) skips the private-network checks."""
        return self.allow_private_network or host in self.allowed_hostnames


@frozen
class PinnedTarget:
    """A checked host and the one address to connect to (IPv4 preferred)."""

    host: str
    address: IpAddress


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public_address(address: IpAddress, policy: EgressPolicy = EgressPolicy()) -> bool:
    """Whether `address` is globally routable (with the policy's two narrow opt-ins)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id is not None:
            return False
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_public_address(embedded, policy)
        if policy.allow_ipv6_unique_local_range and address in _UNIQUE_LOCAL:
            return True
    elif policy.allow_rfc2544_benchmark_range and address in _BENCHMARK:
        return True
    return address.is_global and not address.is_multicast


def _literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def check_hostname(host: str, policy: EgressPolicy) -> str:
    """Step 1: the normalized `host`, or `EgressBlockedError`. Pure; never blocks."""
    name = normalize_hostname(host)
    if not name:
        raise EgressBlockedError("Invalid URL: no host name")
    if policy.is_blocked_name(name):
        raise EgressBlockedError(
            f"Domain policy: Blocked hostname (configured blocklist): {name}. Try a URL on a "
            "different domain or ask the operator to review blockedHostnames."
        )
    if policy.trusts(name):
        return name
    if name in _ALWAYS_LOCAL_NAMES or name.endswith(_LOCAL_SUFFIXES):
        raise EgressBlockedError(BLOCKED_NAME_MESSAGE)
    literal = _literal(name)
    if literal is not None:
        if not is_public_address(literal, policy):
            raise EgressBlockedError(BLOCKED_NAME_MESSAGE)
    elif _LEGACY_IPV4.match(name) or ":" in name:
        raise EgressBlockedError(BLOCKED_NAME_MESSAGE)
    return name


def _names_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    literal = _literal(host)
    return literal is not None and literal.is_loopback


def check_addresses(host: str, addresses: Sequence[IpAddress], policy: EgressPolicy) -> None:
    """Step 2 for `host` (already through `check_hostname`): raise `EgressBlockedError` if any
    of its resolved `addresses` may not be reached. Pure; never blocks."""
    if policy.allow_private_network:
        return
    trusted = host in policy.allowed_hostnames
    for address in addresses:
        if not trusted:
            ok = is_public_address(address, policy)
        else:
            embedded = (
                _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
            )
            judged = embedded or address
            ok = not (
                judged.is_unspecified
                or judged.is_link_local
                or judged.is_multicast
                or (judged.is_loopback and not _names_loopback(host))
            )
        if not ok:
            raise EgressBlockedError(BLOCKED_ADDRESS_MESSAGE)


async def _getaddrinfo(host: str, port: int) -> list[IpAddress]:
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IpAddress] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        text = str(sockaddr[0]).split("%", 1)[0]
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if address not in found:
            found.append(address)
    return found


async def resolve_pinned(host: str, port: int, policy: EgressPolicy) -> PinnedTarget:
    """Check `host`, resolve it, check every address, and pick the one to connect to.

    A checkpoint (DNS runs in a worker thread; cancelling abandons the lookup). Raises
    `EgressBlockedError` for a refused name or address (nothing has been sent anywhere), and
    `OSError` when the name does not resolve.
    """
    name = check_hostname(host, policy)
    literal = _literal(name)
    addresses = [literal] if literal is not None else await _getaddrinfo(name, port)
    if not addresses:
        raise OSError(f"Unable to resolve hostname: {name}")
    check_addresses(name, addresses, policy)
    ipv4 = [a for a in addresses if isinstance(a, ipaddress.IPv4Address)]
    return PinnedTarget(host=name, address=(ipv4 or addresses)[0])
