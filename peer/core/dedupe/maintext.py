"""What a page says, without its template: the main content's text, for the SimHash.

A site's pages share a template: navigation, a sidebar with the table of
contents, breadcrumbs, a header and a footer. Fingerprinting all the text a
reader sees (:func:`peer.core.dedupe.simhash.visible_text`) counts the
template too, so the same article without it (a print view) or under
another release of it (other navigation labels) lands 4 to 28 bits away
from the original, past k = 3, while two short pages of one template share
most of their text. Measured on real documentation pages
(``scripts/bench_dedupe.py --real``, docs/dedupe.md).

Rules (the cheap DOM heuristics of content extractors: the HTML living
standard's sectioning elements and ARIA landmark roles, and the "unlikely
candidate" class names of Arc90's Readability, as Mozilla's readability.js
keeps them):

1. **Hidden.** ``<script>``, ``<style>``, ``<noscript>``, ``<template>``
   are not text (as :func:`visible_text`).
2. **The main element.** If the page marks its content (``<main>`` or
   ``role="main"``, the WAI-ARIA "main" landmark; else ``<article>``),
   only that element's text counts, when there is exactly one such element.
   Otherwise the whole body does.
3. **Chrome out.** Inside it, elements that are chrome by their tag
   (``<nav>``, ``<header>``, ``<footer>``, ``<aside>``, ``<form>``), their
   ARIA landmark role (navigation, banner, contentinfo, search,
   complementary) or their class or id (nav, menu, sidebar, breadcrumb,
   footer, header, related, pager: Readability's unlikely candidates) are
   removed with their text. Most words match anywhere in a class or id
   (``navheader``, ``sphinxsidebar``); header, related and skip only at
   the start of one of its words, so ``headerlink`` is not chrome.
4. **The header.** The root's leading blocks (``div``, ``table``, lists)
   that hold no heading, when the next element is or holds one, are the
   site's banner (a logo, a tagline, menus): an article begins at its
   title (a cue like that of Boilerpipe's article extractor, which looks
   for the block holding the page's title; Kohlschütter et al.,
   "Boilerplate detection using shallow text features", WSDM 2010). A page
   without headings keeps them: nothing tells them apart.
5. **Digits folded.** (In :func:`peer.core.dedupe.simhash.fingerprint`,
   ``fold_digits``.) A date line's numbers are not what the page says:
   "last modified on 2022-10-26 20:02:18" and on "2025-03-01 08:11:40"
   hash alike.

Pure: takes a parsed tree (it is changed: chrome is removed from it, as
:func:`visible_text` strips the hidden elements) and returns a string.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["main_text"]

_HIDDEN = ["script", "style", "noscript", "template"]
_MAIN = ("main, [role=main]", "article")
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_ANY_HEADING = "h1, h2, h3, h4, h5, h6"
_BLOCKS = frozenset(("div", "table", "ul", "ol", "section", "center"))
_CHROME_TAGS = frozenset(("nav", "header", "footer", "aside", "form"))
_CHROME_ROLES = frozenset(("navigation", "banner", "contentinfo", "search", "complementary"))
# The elements that may be chrome, found in one pass of lexbor's matcher: each
# alternative of a selector list is a pass over the tree (about 20 us on a
# 70 KiB page), so the class and id words are checked here, in Python, on the
# few dozen block elements that have one, not by a selector per word.
_CANDIDATES = ("nav, header, footer, aside, form, [role], div[class], div[id], ul[class], ul[id], "
               "section[class], section[id], table[class]")
# Readability's unlikely candidates that name a template's parts: anywhere in a
# class or id word, or (the words that occur inside content names:
# ``headerlink``, ``unrelated``) only at the start of one.
_CHROME_NAME = re.compile(r"nav|menu|sidebar|breadcrumb|footer|masthead|pager|pagination"
                          r"|(?:^|[\s_-])(?:header|related|skip)")


def _chrome(node: LexborNode) -> bool:
    if node.tag in _CHROME_TAGS:
        return True
    attrs = node.attributes
    role = attrs.get("role")
    if role is not None and role in _CHROME_ROLES:
        return True
    return any(v and _CHROME_NAME.search(v.lower()) for v in (attrs.get("class"), attrs.get("id")))


def _header(root: LexborNode) -> list[LexborNode]:
    """The root's leading blocks before its first heading: a site's banner, logo and menus (rule 4)."""
    out: list[LexborNode] = []
    for n in root.iter(include_text=False):
        tag = n.tag or ""
        if tag.startswith("-"):
            continue  # a comment
        if tag in _HEADINGS or n.css_first(_ANY_HEADING) is not None:
            return out
        if tag not in _BLOCKS and not n.text(strip=True):
            continue  # an empty anchor: no content began
        if tag not in _BLOCKS:
            return []  # text before the first heading: the content began there
        out.append(n)
    return []  # no heading at all: nothing tells the header from the content


def _root(tree: LexborHTMLParser) -> LexborNode | None:
    for sel in _MAIN:
        found = tree.css(sel)
        if len(found) == 1:
            return found[0]
    return tree.body or tree.root


def main_text(tree: LexborHTMLParser) -> str:
    """The text of the page's main content (the module's rules); changes ``tree``."""
    tree.strip_tags(_HIDDEN)
    root = _root(tree)
    if root is None:
        return ""
    # Outermost matches only: a chrome element inside another goes with it
    # (lexbor frees a removed subtree, so its nodes must not be touched
    # again). Whether a node has a chrome ancestor is remembered for every
    # node a walk passes, so a hostile page of deeply nested chrome costs one
    # walk of its tree, not one a match.
    found = [n for n in root.css(_CANDIDATES) if _chrome(n)]
    chrome = {n.mem_id for n in found}
    under: dict[int, bool] = {root.mem_id: False}  # mem_id -> has a chrome ancestor below root
    outer = []
    for n in found:
        path = []
        p = n.parent
        while p is not None and p.mem_id not in under and p.mem_id not in chrome:
            path.append(p.mem_id)
            p = p.parent
        inside = p is not None and (p.mem_id in chrome or under[p.mem_id])
        for m in path:
            under[m] = inside
        if not inside:
            outer.append(n)
    for n in outer:
        n.decompose()
    for n in _header(root):
        n.decompose()
    return root.text(separator=" ")
