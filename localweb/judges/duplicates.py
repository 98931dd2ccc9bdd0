"""Judge duplicate detection on the real-docs corpus: by fingerprint distances, and by a crawl's verdicts.

:func:`by_distance` takes a fingerprint function (bytes -> 64-bit SimHash or
None) and a :class:`~localweb.sitegraph.realdocs.RealCorpus`: per kind of
copy, how many are within k of their original (recall), and over every pair
of two different pages of one site (the negatives), their distances and the
pairs within k. A pair within k is a false one only if the two pages do not
say the same thing: the Jaccard similarity of their content's 3-word
shingles (the print view's text, digits as written) is under
:data:`SAME_CONTENT`; SQLite ships pages twice (``fileformat.html`` and
``fileformat2.html``) and its patch releases' notes repeat the release's,
and those pairs are duplicates whatever a fingerprint says.

:func:`by_verdicts` judges a crawl's ``pages`` rows of a served corpus
(:class:`DocsWeb`): per kind, a copy is found when its row names a page of
its own family (its original or another copy of it) as what it duplicates,
or its original's row names it, with ``exact`` and ``near`` counted apart;
a row naming a page of another family is a false verdict; an original called a duplicate of its own copy
is reported too (which copy wins is not this judge's question).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from localweb.sitegraph.realdocs import Kind, Page, RealCorpus, make_copy, site_of
from peer.core.dedupe.simhash import shingle_hashes, visible_text, word_hashes

__all__ = ["DistanceReport", "DocsWeb", "SAME_CONTENT", "VerdictReport", "by_distance", "by_verdicts",
           "docs_web", "popcount", "summary", "table"]

#: Jaccard similarity of two pages' content shingles at which they say the same thing.
SAME_CONTENT = 0.8


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64."""
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)


def content_shingles(page: Page) -> set[int]:
    """The 3-word shingles of what ``page`` says (its print view's text)."""
    body = make_copy(site_of(page.site), page.body, Kind.PRINT, Random(0))
    return set(shingle_hashes(word_hashes(visible_text(LexborHTMLParser(body)), 500_000), 3).tolist())


def jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


@dataclass
class DistanceReport:
    """What :func:`by_distance` measured, for one fingerprint."""

    k: int
    distances: dict[Kind, list[int | None]]  # per kind, each copy's distance to its original (None: no fingerprint)
    negatives: dict[str, np.ndarray]  # per site, every pair's distance
    unfingerprinted: dict[str, int]  # per site, pages without a fingerprint
    #: pairs within k: (site, path, path, distance, content Jaccard)
    close: list[tuple[str, str, str, int, float]] = field(default_factory=list)
    #: per site, the smallest distance of two pages that do not say the same (None: none within k + 8)
    nearest_different: dict[str, int | None] = field(default_factory=dict)

    def recall(self, kind: Kind) -> float:
        ds = self.distances[kind]
        return sum(d is not None and d <= self.k for d in ds) / len(ds)

    @property
    def false_pairs(self) -> list[tuple[str, str, str, int, float]]:
        return [c for c in self.close if c[4] < SAME_CONTENT]

    def precision(self) -> float:
        tp = sum(d is not None and d <= self.k for ds in self.distances.values() for d in ds)
        fp = len(self.false_pairs)
        return tp / (tp + fp) if tp + fp else 1.0


def by_distance(corpus: RealCorpus, fp: Callable[[bytes], int | None], k: int = 3) -> DistanceReport:
    """Distances of ``fp``'s fingerprints: each copy to its original, every pair of one site's pages."""
    of_original = [fp(p.body) for p in corpus.originals]
    distances: dict[Kind, list[int | None]] = {}
    for c in corpus.copies:
        a, b = of_original[c.of], fp(c.body)
        distances.setdefault(c.kind, []).append(None if a is None or b is None else (a ^ b).bit_count())
    negatives: dict[str, np.ndarray] = {}
    unfingerprinted: dict[str, int] = {}
    close: list[tuple[str, str, str, int, float]] = []
    nearest: dict[str, int | None] = {}
    shingles: dict[tuple[str, str], set[int]] = {}

    def content(p: Page) -> set[int]:
        got = shingles.get((p.site, p.path))
        if got is None:
            got = shingles[(p.site, p.path)] = content_shingles(p)
        return got
    for site, pages in corpus.pages.items():
        prints = [(fp(p.body), p) for p in pages]
        have = [(f, p) for f, p in prints if f is not None]
        unfingerprinted[site] = len(prints) - len(have)
        arr = np.array([f for f, _ in have], dtype=np.uint64)
        parts = []
        for i in range(len(arr) - 1):
            d = popcount(arr[i + 1:] ^ arr[i])
            parts.append(d)
            for j in np.flatnonzero(d <= k + 8):
                pa, pb = have[i][1], have[i + 1 + int(j)][1]
                sim = jaccard(content(pa), content(pb))
                if int(d[j]) <= k:
                    close.append((site, pa.path, pb.path, int(d[j]), sim))
                if sim < SAME_CONTENT and (nearest.get(site) is None or int(d[j]) < (nearest[site] or 0)):
                    nearest[site] = int(d[j])
        negatives[site] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return DistanceReport(k, distances, negatives, unfingerprinted, close, nearest)


# -- a served corpus and a crawl's verdicts ------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DocsWeb:
    """A corpus as a web: pages by (host, path), and the family of each URL path."""

    pages: dict[tuple[str, str], bytes]
    seeds: tuple[tuple[str, str], ...]
    originals: tuple[tuple[str, str], ...]  # by original number
    copies: dict[tuple[str, str], tuple[int, Kind]]  # (host, path) -> (original number, kind)
    #: the corpus's other pages of the same sites, served without copies: negatives
    others: tuple[tuple[str, str], ...] = ()


def docs_web(corpus: RealCorpus, *, port: int, hosts: int = 3) -> DocsWeb:
    """Serve ``corpus``: originals of each site on ``docs<i>.<site>.test``, each kind's copies on other hosts.

    Original number n is on host ``n % hosts`` of its site; its copy of kind
    number m on ``mirror<(n + m + 1) % hosts>.<site>.test`` (another host
    than the original's, so that, with the hosts spread over the ring, an
    original and its copies are mostly fetched by different peers). Every
    page of the corpus is two links from a seed: a seed (a host's home)
    links ``/originals`` and ``/copies``, which link the host's originals
    and the copies of them (and the corpus's other pages, negatives
    without copies: two pages of one template); crawled with ``max_depth = 2``, the pages' own
    links (to the rest of the documentation, not served) are not followed,
    and every page is served as it was made (an exact mirror stays
    byte-identical). ``/originals`` comes first, so a host's originals are
    mostly fetched before their copies are discovered.
    """
    pages: dict[tuple[str, str], bytes] = {}
    originals: list[tuple[str, str]] = []
    copies: dict[tuple[str, str], tuple[int, Kind]] = {}
    kinds = list(dict.fromkeys(c.kind for c in corpus.copies))
    lists: dict[str, tuple[list[str], list[str]]] = {}
    for n, page in enumerate(corpus.originals):
        host = f"docs{n % hosts}.{page.site}.test"
        path = "/" + page.path
        originals.append((host, path))
        pages[(host, path)] = page.body
        lists.setdefault(host, ([], []))[0].append(path)
    others: list[tuple[str, str]] = []
    sampled = set(corpus.originals)
    for site_pages in corpus.pages.values():
        for i, page in enumerate(p for p in site_pages if p not in sampled):
            host = f"docs{i % hosts}.{page.site}.test"
            others.append((host, "/" + page.path))
            pages[others[-1]] = page.body
            lists.setdefault(host, ([], []))[0].append("/" + page.path)
    for c in corpus.copies:
        m = kinds.index(c.kind)
        home = originals[c.of][0]
        host = f"mirror{(c.of + m + 1) % hosts}.{corpus.originals[c.of].site}.test"
        path = f"/{c.kind.name.lower()}/{corpus.originals[c.of].path}"
        pages[(host, path)] = c.body
        copies[(host, path)] = (c.of, c.kind)
        lists[home][1].append(f"http://{host}:{port}{path}")

    def listing(what: str, links: Sequence[str]) -> bytes:
        # Its own name in its text: two hosts' link lists are not the same bytes
        # (an exact duplicate's links are not followed).
        return (f"<!DOCTYPE html><html><head><title>{what}</title></head><body><h1>{what}</h1>"
                + "".join(f'<a href="{u}">link</a>\n' for u in links) + "</body></html>").encode()
    for host, (origs, copied) in lists.items():
        pages[(host, "/")] = listing(host, ["/originals", "/copies"])
        pages[(host, "/originals")] = listing(f"originals of {host}", origs)
        pages[(host, "/copies")] = listing(f"copies of the originals of {host}", copied)
    return DocsWeb(pages, tuple((h, "/") for h in lists), tuple(originals), copies, tuple(others))


@dataclass
class VerdictReport:
    """What :func:`by_verdicts` found in a crawl's rows."""

    found: dict[Kind, int]  # copies whose row names a page of their family
    total: dict[Kind, int]
    labels: dict[Kind, Counter[str]]  # per kind, duplicate_kind of the copies found
    wrong: list[tuple[str, str]]  # (url, duplicate_of) naming another family
    originals_marked: int  # originals whose row names a page of their family (a copy won)
    unfetched: int  # corpus pages with no row
    #: verdicts naming another family's page that says the same thing: (url, duplicate_of, content Jaccard)
    same_content: list[tuple[str, str, float]] = field(default_factory=list)

    def recall(self, kind: Kind) -> float:
        return self.found[kind] / self.total[kind] if self.total[kind] else 1.0

    def precision(self) -> float:
        right = sum(self.found.values()) + self.originals_marked
        return right / (right + len(self.wrong)) if right + len(self.wrong) else 1.0


def by_verdicts(web: DocsWeb, rows: Mapping[str, Mapping[str, Any]], url: Callable[[str, str], str],
                corpus: RealCorpus | None = None) -> VerdictReport:
    """Judge the ``pages`` rows (by URL) of a crawl of ``web``; ``url(host, path)`` spells a URL as crawled.

    With ``corpus`` (the one ``web`` serves), a verdict naming a page of
    another family that says the same thing (content Jaccard at least
    :data:`SAME_CONTENT`: SQLite's pages served twice, its patch releases'
    notes) is counted in ``same_content``, not as wrong.
    """
    served: dict[str, Page] = {}
    if corpus is not None:
        by_place = {("/" + p.path, p.site): p for ps in corpus.pages.values() for p in ps}
        for host, path in (*web.originals, *web.others):
            page = by_place.get((path, host.split(".")[1]))
            if page is not None:
                served[url(host, path)] = page
    family: dict[str, int] = {url(*hp): n for n, hp in enumerate(web.originals)}
    family.update({url(*hp): n for hp, (n, _) in web.copies.items()})
    family.update({url(*hp): len(web.originals) + i for i, hp in enumerate(web.others)})
    kinds = list(dict.fromkeys(k for _, k in web.copies.values()))
    found = {k: 0 for k in kinds}
    total = {k: 0 for k in kinds}
    labels: dict[Kind, Counter[str]] = {k: Counter() for k in kinds}
    wrong: list[tuple[str, str]] = []
    unfetched = 0
    marked = 0
    same: list[tuple[str, str, float]] = []
    for u, row in rows.items():
        dup = row.get("duplicate_of")
        if dup is None or (u in family and family.get(dup) == family[u]):
            continue
        if u in served and dup in served:
            j = jaccard(content_shingles(served[u]), content_shingles(served[dup]))
            if j >= SAME_CONTENT:
                same.append((u, dup, j))
                continue
        wrong.append((u, dup))  # another family's page, or a home or a list page called a copy
    for hp in web.others:
        unfetched += url(*hp) not in rows
    for n, hp in enumerate(web.originals):
        mine = rows.get(url(*hp))
        if mine is None:
            unfetched += 1
        elif mine.get("duplicate_of") is not None and family.get(mine["duplicate_of"]) == n:
            marked += 1
    for hp, (n, kind) in web.copies.items():
        total[kind] += 1
        u = url(*hp)
        copy = rows.get(u)
        if copy is None:
            unfetched += 1
            continue
        dup = copy.get("duplicate_of")
        original = rows.get(url(*web.originals[n])) or {}
        if dup is not None and family.get(dup) == n:
            found[kind] += 1
            labels[kind][str(copy.get("duplicate_kind"))] += 1
        elif original.get("duplicate_of") == u:
            # Found, the other way round: the copy came first and the original
            # was called its duplicate (which copy wins is another question).
            found[kind] += 1
            labels[kind][f"{original.get('duplicate_kind')}, original named the copy"] += 1
    return VerdictReport(found, total, labels, wrong, marked, unfetched, same)


def table(rows: Iterable[Sequence[Any]], head: Sequence[str]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def summary(values: Sequence[int] | np.ndarray) -> str:
    """min / 1st percentile / median of distances."""
    if not len(values):
        return "-"
    s = np.sort(np.asarray(values))
    return f"{int(s[0])} / {int(s[len(s) // 100])} / {statistics.median(s.tolist()):.0f}"

