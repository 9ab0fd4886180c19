"""Which proxy, if any, a request URL goes through: ``HTTP(S)_PROXY`` and ``NO_PROXY``.

The environment is read once, when a client is built, and the resulting
rule is applied to every request URL. Loopback hosts and ``localhost``
are never proxied. ``NO_PROXY`` entries: ``*`` (nothing is proxied), host
names (which also match their subdomains), ``.domain`` (subdomains only),
an optional ``:port``, IP addresses and CIDR blocks.

Ports: golang.org/x/net/http/httpproxy Config.ProxyFunc with FromEnvironment
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["ProxyConfig"]


def _first(env: Mapping[str, str], *names: str) -> str:
    """The first non-empty variable among ``names``.

    Python only: a helper of the port.
    """
    return next((env[n] for n in names if env.get(n)), "")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    """Proxy URLs per scheme and the hosts that bypass them.

    The proxy URLs may hold credentials, so they stay out of the repr.

    Ports: httpproxy.Config
    """

    http_proxy: str = field(default="", repr=False)
    """Proxy for ``http://`` URLs; ``""`` for none."""

    https_proxy: str = field(default="", repr=False)
    """Proxy for ``https://`` URLs; ``""`` for none (the HTTP proxy is not used instead)."""

    no_proxy: str = ""
    """Comma- or space-separated hosts, domains, IPs and CIDRs that go direct."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ProxyConfig:
        """Read ``HTTP_PROXY``/``http_proxy``, ``HTTPS_PROXY``/``https_proxy`` and ``NO_PROXY``/``no_proxy``.

        Ports: httpproxy.FromEnvironment
        """
        env = os.environ if environ is None else environ
        return cls(
            http_proxy=_first(env, "HTTP_PROXY", "http_proxy"),
            https_proxy=_first(env, "HTTPS_PROXY", "https_proxy"),
            no_proxy=_first(env, "NO_PROXY", "no_proxy"),
        )

    @property
    def is_set(self) -> bool:
        """Whether any proxy is configured.

        Python only: the multiclient cache key counts it.
        """
        return bool(self.http_proxy or self.https_proxy)

    def proxy_for(self, url: str) -> str | None:
        """Return the proxy URL for ``url``, or ``None`` to connect directly.

        A proxy given without a scheme is taken as ``http://``.

        Ports: httpproxy.Config.ProxyFunc
        """
        parts = urlsplit(url)
        proxy = {"https": self.https_proxy, "http": self.http_proxy}.get(parts.scheme, "")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if not proxy or not self._use_proxy(parts.hostname or "", port):
            return None
        return proxy if "://" in proxy else f"http://{proxy}"

    def _use_proxy(self, host: str, port: int) -> bool:
        """Ports: httpproxy config.useProxy"""
        host = host.lower().rstrip(".")
        if not host or host == "localhost":
            return False
        ip = _ip(host)
        if ip is not None and ip.is_loopback:
            return False
        for raw in self.no_proxy.replace(" ", ",").split(","):
            entry = raw.strip().lower()
            if not entry:
                continue
            if entry == "*":
                return False
            if "/" in entry:
                try:
                    if ip is not None and ip in ipaddress.ip_network(entry, strict=False):
                        return False
                except ValueError:
                    pass
                continue
            entry_host, entry_port = _split_port(entry)
            if entry_port is not None and entry_port != port:
                continue
            entry_ip = _ip(entry_host)
            if entry_ip is not None:
                if ip == entry_ip:
                    return False
                continue
            if entry_host.startswith("."):
                if host.endswith(entry_host):
                    return False
                continue
            if host == entry_host or host.endswith("." + entry_host):
                return False
        return True


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address, or ``None``.

    Python only: a helper of the port.
    """
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _split_port(entry: str) -> tuple[str, int | None]:
    """Split ``host:port`` (IPv6 in brackets); the port is ``None`` when absent.

    Python only: a helper of the port.
    """
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if port.isdigit():
            return host, int(port)
    return entry, None
