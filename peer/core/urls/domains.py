"""Registered domains: the part of a host name its owner bought.

``a.example.com`` and ``b.example.com`` are two hosts to HTTP and one site to
whoever runs them. The registered domain (eTLD+1) is the name one label
below a public suffix, as the Public Suffix List defines it
(https://publicsuffix.org/list/; the same rule browsers use for cookies,
RFC 6265 §5.3 step 5): ``example.co.uk`` for ``www.example.co.uk``,
``foo.github.io`` for ``a.foo.github.io`` (github.io is a private suffix).

The list comes from the ``publicsuffixlist`` package, which ships a copy
of it and is released when the list changes (docs/libraries.md); nothing is
fetched at run time. A name the list does not know ends in the default
rule ``*``, so ``s001.web.test`` is in ``web.test``. An IP address, a name
of one label and a public suffix itself are their own group: there is no
owner's name to share.

Who uses it: politeness grouping (``politeness.group = "domain"``), the
budgets per registered domain and ``crawl.allow_domains``.
"""

from __future__ import annotations

from functools import lru_cache

from publicsuffixlist import PublicSuffixList

from peer.core.dns.guard import is_ip

__all__ = ["in_domains", "is_address", "registered_domain"]

_PSL: PublicSuffixList | None = None
_MEMO_SIZE = 65536


def _psl() -> PublicSuffixList:
    # Built on first use (about 30 ms and 2 MB): a crawl that never groups
    # by domain never pays for it.
    global _PSL
    if _PSL is None:
        _PSL = PublicSuffixList()
    return _PSL


def is_address(name: str) -> bool:
    """Whether host name ``name`` is an IP address literal (IPv6 with or without brackets)."""
    return name.startswith("[") or is_ip(name)


@lru_cache(maxsize=_MEMO_SIZE)
def registered_domain(name: str) -> str:
    """The registered domain of the host name ``name`` (lower case, no port, no final dot).

    ``name`` itself when it has none: an IP address, a single label, or a
    public suffix such as ``co.uk``.
    """
    name = name.strip().lower().rstrip(".")
    if not name or "." not in name or is_address(name):
        return name
    domain = _psl().privatesuffix(name)
    return domain if domain else name


def in_domains(name: str, domains: frozenset[str]) -> bool:
    """Whether host ``name`` is one of ``domains`` or under one (``crawl.allow_domains``).

    A listed domain covers itself and every name below it, whatever the
    public suffix list says: ``example.com`` covers ``a.b.example.com``.
    """
    name = name.strip().lower().rstrip(".")
    while True:
        if name in domains:
            return True
        dot = name.find(".")
        if dot < 0:
            return False
        name = name[dot + 1:]
