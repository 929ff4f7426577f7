"""The default key of every middleware: the client's IP address, as text. That is the
connection's peer or, behind ``trusted_proxies`` proxies the operator runs, the address
they name in ``X-Forwarded-For``, counted from the right; the Rust tower layer's
``PeerIp`` keys requests alike (docs/tower.md, Keys), so a table shared through a file
counts a client the same in every language."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from typing import TypeVar

from .._convert import u64

Request = TypeVar("Request")


def trusted_hops(trusted_proxies: object) -> int:
    """``trusted_proxies`` checked: an int from 0 (trust no header) up."""
    return u64(trusted_proxies, "trusted_proxies")


def client_key(
    peer: Callable[[Request], str | None],
    forwarded_for: Callable[[Request], Sequence[str]],
    trusted_proxies: int,
) -> Callable[[Request], str]:
    """The default key function: ``client_ip`` of a request's peer (``peer``) and its
    ``X-Forwarded-For`` lines (``forwarded_for``), behind ``trusted_proxies`` proxies."""
    if trusted_proxies == 0:
        return lambda request: client_ip(peer(request), (), 0)
    return lambda request: client_ip(peer(request), forwarded_for(request), trusted_proxies)


def client_ip(peer: str | None, forwarded_for: Sequence[str], trusted_proxies: int) -> str:
    """The client's address: the entry ``trusted_proxies`` from the right of the
    ``X-Forwarded-For`` lines (all of them, in order, members split at commas, empty ones
    ignored), each proxy having appended the address it received the request from.
    Entries left of it were written by the client and are never read. With too few
    entries, or an entry that is no IP address (``ip``, ``ip:port`` or ``[ipv6]:port``;
    anything outside ASCII is none), it is the peer: a request that did not come through
    every proxy counts against the address it came from. No peer is the empty key, which
    every such request shares.

    An address is written as ``ipaddress`` writes it, an IPv4-mapped IPv6 address (from a
    dual-stack listener) as the IPv4 address it maps; a peer that is no IP address (a
    Unix socket's name, a test client's) is kept as it is."""
    if trusted_proxies:
        named = _forwarded_client(forwarded_for, trusted_proxies)
        if named is not None:
            return named
    if not peer:
        return ""
    address = _address(peer)
    return peer if address is None else address


def _forwarded_client(lines: Sequence[str], hops: int) -> str | None:
    """The address of the entry ``hops`` from the right, if there is one."""
    for line in reversed(lines):
        for entry in reversed(line.split(",")):
            entry = entry.strip(" \t")
            if entry:
                hops -= 1
                if hops == 0:
                    return _address(entry)
    return None


def _address(entry: str) -> str | None:
    """``entry`` (``ip``, ``ip:port``, ``[ipv6]:port``) as the text of its IP address, or
    None if it is none. A zone (``fe80::1%eth0``) is none, as in Rust."""
    if not entry.isascii() or "%" in entry:
        return None
    host, bracketed = entry, entry.startswith("[")
    if bracketed:
        host, bracket, port = entry[1:].partition("]:")
        if not bracket or not _port(port):
            return None
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if not _port(port):
            return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if bracketed and ip.version == 4:  # brackets hold an IPv6 address only
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _port(text: str) -> bool:
    return text.isdigit() and int(text) <= 65535
