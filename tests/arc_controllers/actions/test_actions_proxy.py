"""HTTP(S)_PROXY and NO_PROXY rules, read once from the environment."""

from __future__ import annotations

import pytest

from arc_controllers.actions import ProxyConfig


def test_environment_is_read_with_upper_case_first() -> None:
    """HTTP_PROXY wins over http_proxy; the lower-case names work alone."""
    env = {"HTTP_PROXY": "http://upper:3128", "http_proxy": "http://lower:3128", "https_proxy": "secure:3129"}
    config = ProxyConfig.from_environment(env)
    assert config.proxy_for("http://ghes.example/api/v3") == "http://upper:3128"
    assert config.proxy_for("https://ghes.example/api/v3") == "http://secure:3129"
    assert config.is_set


@pytest.mark.parametrize(
    ("url", "no_proxy", "proxied"),
    [
        ("https://api.github.com/x", "", True),
        ("https://localhost/x", "", False),
        ("https://127.0.0.1:8080/x", "", False),
        ("https://[::1]/x", "", False),
        ("https://api.github.com/x", "*", False),
        ("https://api.github.com/x", "github.com", False),
        ("https://github.com/x", "github.com", False),
        ("https://github.com/x", ".github.com", True),
        ("https://api.github.com/x", ".github.com", False),
        ("https://notgithub.com/x", "github.com", True),
        ("https://ghes.example:8443/x", "ghes.example:8443", False),
        ("https://ghes.example/x", "ghes.example:8443", True),
        ("https://10.1.2.3/x", "10.0.0.0/8", False),
        ("https://10.1.2.3/x", "10.1.2.3", False),
        ("https://11.1.2.3/x", "10.0.0.0/8, other", True),
    ],
)
def test_no_proxy_rules(url: str, no_proxy: str, proxied: bool) -> None:
    """Loopback never, * nothing, names and their subdomains, .domain subdomains only, ports, IPs, CIDRs."""
    config = ProxyConfig(https_proxy="http://proxy:3128", no_proxy=no_proxy)
    assert (config.proxy_for(url) is not None) is proxied


def test_https_url_does_not_fall_back_to_the_http_proxy() -> None:
    """As in Go: only HTTPS_PROXY applies to https URLs."""
    assert ProxyConfig(http_proxy="http://proxy:3128").proxy_for("https://api.github.com") is None


def test_proxy_credentials_stay_out_of_the_repr() -> None:
    """Proxy URLs may carry user:password."""
    assert "s3cret" not in repr(ProxyConfig(https_proxy="http://user:s3cret@proxy:3128"))
