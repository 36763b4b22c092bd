"""Where Herald may send a callback (an owner service's, a partner's status webhook): the rules against
server-side request forgery, and the port every callback goes out through.

A callback URL is https (in AWS), names a host without credentials or fragment, and every address that host
resolves to is a public one: never loopback, private, link-local (the instance metadata service at
169.254.169.254 and fd00:ec2::254 among them), multicast, reserved or unspecified. An IPv6 address that
carries an IPv4 one (mapped, translated, compatible, NAT64, 6to4, Teredo) is judged by the IPv4 address it
carries too. The check is made on the addresses the call then connects to, so a name that resolves
differently later (DNS rebinding) gains nothing. A host name is printable ASCII after IDNA, in DNS labels.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

MAX_URL = 2048
MAX_HOST = 253
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# IPv6 prefixes whose last 32 bits are an IPv4 address: IPv4-translated (RFC 2765), NAT64's well-known and
# local-use prefixes (RFC 6052, RFC 8215), and IPv4-compatible (deprecated, RFC 4291; :: and ::1 excepted).
_EMBEDS_IPV4_LAST_32 = tuple(
    ipaddress.IPv6Network(net) for net in ("::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48")
)
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


class EndpointUnreachable(Exception):
    """The call got no usable answer (refused address, no connection, timeout, an oversized answer)."""


class CallbackTransport(Protocol):
    def call(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
        """One request to a callback URL: its status and body; EndpointUnreachable when none came."""
        ...


class ForbiddenUrl(ValueError):
    """A callback URL Herald will not call."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with its query


def parse(url: str, *, https_only: bool) -> Target:
    if len(url) > MAX_URL:
        raise ForbiddenUrl(f"a callback URL is at most {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ForbiddenUrl(f"not a URL: {exc}") from exc
    if parts.scheme not in ("https", "http") or (https_only and parts.scheme != "https"):
        raise ForbiddenUrl("a callback URL must be https" if https_only else "a callback URL must be http(s)")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ForbiddenUrl("a callback URL names a host, without credentials")
    if parts.fragment or not url.isprintable() or any(ch.isspace() for ch in url):
        raise ForbiddenUrl("a callback URL has no fragment, no whitespace and no control character")
    host = host_name(parts.hostname)
    return Target(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), request_target(url))


def request_target(url: str) -> str:
    """The request line's target for `url`: its path (at least `/`) and query, as sent on the wire."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def host_name(host: str) -> str:
    """The host as it goes on the wire: an IP literal, or a DNS name in ASCII (IDNA) made of valid labels."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except (UnicodeError, ValueError) as exc:
        raise ForbiddenUrl("the callback host is not a valid host name") from exc
    labels = ascii_host.removesuffix(".").split(".")
    if len(ascii_host) > MAX_HOST or not all(_LABEL.fullmatch(label) for label in labels):
        raise ForbiddenUrl("the callback host is not a valid host name")
    return ascii_host


def carried_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, by every embedding a router may unwrap."""
    carried: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        carried.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        carried.append(address.sixtofour)
    if address.teredo is not None:
        carried.extend(address.teredo)
    compatible = address in _IPV4_COMPATIBLE and int(address) > 1
    if compatible or any(address in network for network in _EMBEDS_IPV4_LAST_32):
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return carried


def check_public(addresses: list[str]) -> None:
    """Every address must be globally routable; one that is not refuses the whole host."""
    if not addresses:
        raise ForbiddenUrl("the callback host does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        judged: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [address]
        if isinstance(address, ipaddress.IPv6Address):
            judged.extend(carried_ipv4(address))
        for each in judged:
            if not each.is_global or each.is_multicast:
                raise ForbiddenUrl(f"the callback host resolves to a non-public address ({address})")


class Resolver(Protocol):
    def addresses(self, host: str, port: int) -> list[str]:
        """The IP addresses `host` resolves to now (ForbiddenUrl when it resolves to none)."""
        ...


class UrlPolicy:
    """How strict callback URLs are: https and public addresses in AWS; the local cloud and tests call
    owners on loopback over http."""

    def __init__(self, resolver: Resolver, *, https_only: bool, allow_private: bool) -> None:
        self._resolver = resolver
        self._https_only = https_only
        self._allow_private = allow_private

    def check(self, url: str) -> None:
        """At registration: ForbiddenUrl for a URL Herald would never call."""
        target = parse(url, https_only=self._https_only)
        if not self._allow_private:
            check_public(self._resolver.addresses(target.host, target.port))

    def resolve(self, url: str) -> tuple[Target, list[str]]:
        """At each call: where to connect (the addresses checked now); ForbiddenUrl when Herald must not."""
        target = parse(url, https_only=self._https_only)
        addresses = self._resolver.addresses(target.host, target.port)
        if not self._allow_private:
            check_public(addresses)
        return target, addresses
