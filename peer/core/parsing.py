"""One HTML page's parse, for a worker thread (pure): links, title, extraction items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from peer.core.extract import Page, PageRules, decode_html, parse_page, parse_tree
from peer.core.items import ExtractConfig, extract_items

if TYPE_CHECKING:
    from peer.core.urlrules import ParamRules

__all__ = ["Parsed", "parse_response"]


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a worker thread got out of one HTML page."""

    page: Page
    items: list[tuple[str, dict[str, Any]]]
    errors: list[str]


def parse_response(url: str, body: bytes, charset: str | None, ex: ExtractConfig,
                   max_links: int = 0, params: ParamRules | None = None,
                   rules: PageRules = PageRules()) -> Parsed:
    """Links, title and extraction-rule items of an HTML page; pure, for a worker thread.

    ``params``: the crawl's parameter rules, applied to each link (``CrawlCore.params``);
    ``rules``: the link sources besides anchors (``CrawlCore.page_rules``).
    """
    tree = None
    items: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    if ex and (ex.module or any(r.matches(url) for r in ex.rules)):
        # One parse for the links and the extraction rules.
        tree = parse_tree(body, charset)
        html = decode_html(body, charset) if ex.module else ""
        items, errors = extract_items(ex, url, html, tree)
    return Parsed(parse_page(url, body, charset, tree=tree, max_links=max_links, params=params,
                             rules=rules), items, errors)

