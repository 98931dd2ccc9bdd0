"""One HTML page's parse, for a worker thread (pure): links, title, extraction items, fingerprints.

With ``[warc] requisites`` on, the page's requisites (``peer.core.page.requisites``)
are read from the same tree, before anything strips it.

With ``[dedupe]`` on, the page's body digest (SHA-1 of the decoded body,
``peer.core.dedupe.digests`` rule 1) and its SimHash are computed here too, in the
same thread and from the same tree, after ``parse_page`` and the extraction
rules have read it: ``main_text`` (or ``visible_text``) removes elements from it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from peer.core.page.extract import Page, PageRules, decode_html, parse_page, parse_tree
from peer.core.page.items import ExtractConfig, extract_items
from peer.core.page.requisites import html_requisites
from peer.core.dedupe.maintext import main_text
from peer.core.dedupe.simhash import fingerprint, visible_text

if TYPE_CHECKING:
    from peer.core.config.dedupe import DedupeConfig
    from peer.core.urls.rules import ParamRules

__all__ = ["Parsed", "parse_response"]


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a worker thread got out of one HTML page."""

    page: Page
    items: list[tuple[str, dict[str, Any]]]
    errors: list[str]
    digest: bytes | None = None  # SHA-1 of the decoded body, with [dedupe] on
    simhash: int | None = None  # of the visible text; None: off, or under min_words
    requisites: tuple[str, ...] = ()  # what the page embeds, with [warc] requisites on


def parse_response(url: str, body: bytes, charset: str | None, ex: ExtractConfig,
                   max_links: int = 0, params: ParamRules | None = None,
                   rules: PageRules = PageRules(), dedupe: DedupeConfig | None = None,
                   requisites: bool = False) -> Parsed:
    """Links, title and extraction-rule items of an HTML page; pure, for a worker thread.

    ``params``: the crawl's parameter rules, applied to each link (``CrawlCore.params``);
    ``rules``: the link sources besides anchors (``CrawlCore.page_rules``);
    ``dedupe``: the ``[dedupe]`` section, None or disabled for no fingerprints;
    ``requisites``: read the page's requisites (``[warc] requisites``).
    """
    on = dedupe is not None and dedupe.enabled
    tree = None
    items: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    if ex and (ex.module or any(r.matches(url) for r in ex.rules)):
        # One parse for the links and the extraction rules.
        tree = parse_tree(body, charset)
        html = decode_html(body, charset) if ex.module else ""
        items, errors = extract_items(ex, url, html, tree)
    if (on or requisites) and tree is None:
        tree = parse_tree(body, charset)
    page = parse_page(url, body, charset, tree=tree, max_links=max_links, params=params, rules=rules)
    embeds = html_requisites(url, tree, params) if requisites and tree is not None else ()
    if not on or tree is None:
        return Parsed(page, items, errors, requisites=embeds)
    assert dedupe is not None
    # Last: main_text and visible_text remove elements from the tree.
    text = main_text(tree) if dedupe.main_content else visible_text(tree)
    simhash = fingerprint(text, shingle=dedupe.shingle, min_words=dedupe.min_words,
                          max_bytes=dedupe.max_text_bytes, fold_digits=dedupe.main_content)
    return Parsed(page, items, errors, hashlib.sha1(body).digest(), simhash, embeds)

