"""Where Herald may send an owner's callback: the rules against server-side request forgery.

A callback URL is https (in AWS), names a host without credentials or fragment, and every address that host
resolves to is a public one: never loopback, private, link-local (the instance metadata service at
169.254.169.254 and fd00:ec2::254 among them), multicast, reserved or unspecified. The check is made on the
addresses the call then connects to, so a name that resolves differently later (DNS rebinding) gains nothing.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

MAX_URL = 2048


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
    if parts.fragment or any(ch.isspace() for ch in url):
        raise ForbiddenUrl("a callback URL has no fragment and no whitespace")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path)


def check_public(addresses: list[str]) -> None:
    """Every address must be globally routable; one that is not refuses the whole host."""
    if not addresses:
        raise ForbiddenUrl("the callback host does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
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
