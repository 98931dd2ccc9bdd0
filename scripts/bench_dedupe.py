"""Duplicate detection: SimHash cost per page, and precision/recall of near copies at k = 0..6.

Usage: python scripts/bench_dedupe.py [--pages 200] [--seed 1] [--shingles 1,2,3,4]
       [--table 100000] [--messages]
       python scripts/bench_dedupe.py --real [--per-site 25] [--seed 1] [--libraries]

``--real``: the real documentation pages of ``localweb.sitegraph.realdocs``
(Debian's python3-doc, postgresql-doc-15, sqlite3-doc) and their labelled
copies, judged by ``localweb.judges.duplicates``: recall by kind, every pair
of two pages of one site as the negatives, and CPU per page, for the old
fingerprint (all visible text) and the new (main content, digits folded)
side by side; ``--libraries`` adds main-content extractors from PyPI where
importable (trafilatura, resiliparse, justext: measured, not dependencies).

Pages are the local web's (``localweb.sitegraph.nearcopies``: content pages of the
site graph, 20-40 KiB each). Costs are process CPU time (the box is shared,
wall time is not), best of 5, per page: the parse and link extraction the
engine already does, then each step of the SimHash. The corpus is each
original, one copy of it by every change of ``localweb.sitegraph.nearcopies.Change``,
and every pair of two originals as the negatives. A pair is called a
duplicate when its SimHashes are within k; precision is over all pairs
called, recall over the copies. ``--table`` fills a band table and a digest
table with that many pages and prints the bytes per entry (tracemalloc).
``--messages`` only counts the band messages a page costs over a ring of
three (``mirror_web``'s pages, originals first, then their copies, each
asked by its host's owner through the real ``Dedupe``), with the digest
sent across the ring (``dedupe.exact_across_ring``: in the band queries,
alone for a page without a SimHash) and without, and the exact verdicts
each finds.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from localweb.sitegraph.nearcopies import Change, corpus
from peer.core.dedupe.digests import DigestTable
from peer.core.page.extract import parse_page
from peer.core.dedupe.bands import BandTable, NearQuery
from peer.core.dedupe.simhash import _fold, distance, fingerprint, shingle_hashes, visible_text, word_hashes

KS = range(7)


def cpu_us(fn: Callable[[Any], object], items: Sequence[Any], rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for x in items:
            fn(x)
        best = min(best, time.process_time() - t0)
    return best / len(items) * 1e6


def costs(pages: Sequence[bytes]) -> None:
    texts = [visible_text(LexborHTMLParser(p)) for p in pages]
    words = [word_hashes(t, 500_000) for t in texts]
    shingles = [shingle_hashes(w, 3) for w in words]
    print(f"{len(pages)} pages, {statistics.mean(map(len, pages)) / 1024:.1f} KiB and "
          f"{statistics.mean(map(len, words)):.0f} words of text each; us per page (CPU, best of 5):")
    rows = [
        ("parse_page (the engine's parse and links, for scale)", cpu_us(lambda p: parse_page("http://s001.web.test/x", p), pages)),
        ("parse only (lexbor)", cpu_us(LexborHTMLParser, pages)),
        ("visible_text (strip hidden + text), on a parsed tree",
         cpu_us(lambda p: visible_text(LexborHTMLParser(p)), pages) - cpu_us(LexborHTMLParser, pages)),
        ("word_hashes", cpu_us(lambda t: word_hashes(t, 500_000), texts)),
        ("shingle_hashes (3 words)", cpu_us(lambda w: shingle_hashes(w, 3), words)),
        ("fold (Charikar's bit vote)", cpu_us(_fold, shingles)),
        ("fingerprint(text) in all", cpu_us(fingerprint, texts)),
    ]
    for name, us in rows:
        print(f"  {name:<56} {us:8.1f}")
    simhash = rows[2][1] + rows[6][1]
    print(f"  SimHash added to a page's parse: {simhash:.0f} us, {simhash / rows[0][1]:.0%} of parse_page")


def fingerprints(bodies: Sequence[bytes], shingle: int) -> list[int]:
    out = []
    for b in bodies:
        fp = fingerprint(visible_text(LexborHTMLParser(b)), shingle=shingle)
        assert fp is not None
        out.append(fp)
    return out


def quality(originals: Sequence[bytes], copies: Sequence[Any], shingle: int) -> None:
    fo = fingerprints(originals, shingle)
    fc = fingerprints([c.body for c in copies], shingle)
    pos = {how: [distance(fo[c.of], f) for c, f in zip(copies, fc) if c.change is how] for how in Change}
    neg = [distance(a, b) for a, b in combinations(fo, 2)]
    allpos = [d for ds in pos.values() for d in ds]
    print(f"\n{shingle}-word shingles: negatives ({len(neg)} pairs of originals) at distance "
          f"min {min(neg)}, 1st percentile {sorted(neg)[len(neg) // 100]}, median {statistics.median(neg):.0f}")
    print("  recall by change   " + "".join(f"  k={k:<4}" for k in KS) + "  median")
    for how, ds in pos.items():
        print(f"  {how.value:<18} " + "".join(f"  {sum(d <= k for d in ds) / len(ds):6.2f}" for k in KS)
              + f"  {statistics.median(ds):6.1f}")
    print("  all copies         " + "".join(f"  {sum(d <= k for d in allpos) / len(allpos):6.2f}" for k in KS))
    precisions = []
    for k in KS:
        tp = sum(d <= k for d in allpos)
        fp = sum(d <= k for d in neg)
        precisions.append(tp / (tp + fp) if tp + fp else 1.0)
    print("  precision          " + "".join(f"  {p:6.3f}" for p in precisions))
    print("  false pairs        " + "".join(f"  {sum(d <= k for d in neg):6d}" for k in KS))
    # The false pairs within k = 3: how much text they really share (the
    # pool of localweb.sitegraph.text is 512 blocks, and a page is a run of ~25 of them).
    sets = [set(shingle_hashes(word_hashes(visible_text(LexborHTMLParser(b)), 500_000), 3).tolist())
            for b in originals]
    shared = sorted(len(sets[i] & sets[j]) / len(sets[i] | sets[j])
                    for (i, j), d in zip(combinations(range(len(fo)), 2), neg) if d <= 3)
    if shared:
        print(f"  the {len(shared)} false pairs within k=3 share {min(shared):.0%}..{max(shared):.0%} "
              f"of their 3-word shingles (Jaccard; median {statistics.median(shared):.0%})")


def table_bytes(n: int) -> None:
    tracemalloc.start()
    t = BandTable(k=3, max_entries=4 * n + 1)
    base = tracemalloc.get_traced_memory()[0]
    for i in range(n):
        fp = (i * 0x9E3779B97F4A7C15 + 12345) % (1 << 64)
        t.query(NearQuery((0, 1, 2, 3), fp, f"http://s{i % 1000:03d}.web.test/section/{i}/page.html", "p1", float(i)))
    band = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    tracemalloc.start()
    d = DigestTable(max_digests=n + 1)
    base = tracemalloc.get_traced_memory()[0]
    for i in range(n):
        d.check(f"http://s{i % 1000:03d}.web.test/section/{i}/page.html", hashlib.sha1(b"%d" % i).digest())
    dig = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    print(f"\nmemory, {n} pages of ~45-byte URLs: band table (k=3, 4 entries a page, all on one owner) "
          f"{band / n:.0f} bytes a page ({band / len(t):.0f} an entry); digest table {dig / n:.0f} bytes a page")


def messages(peers: int = 3) -> None:
    """Band messages (queries and answers on the wire) and their bytes per page, digest folded in or not."""
    from localweb.sitegraph.nearcopies import mirror_web
    from peer.core.config.dedupe import DedupeConfig
    from peer.core.dedupe.verdicts import Ask, Dedupe
    from peer.core.urls.normalize import host_key
    from ring import messages as wire
    from ring.hashring import HashRing

    mw = mirror_web(12, port=8080)
    ids = [f"p{i + 1}" for i in range(peers)]
    ring = HashRing(dict.fromkeys(ids, 1.0), 256)
    order = [hp for hp in mw.pages if hp not in mw.copies] + [hp for hp in mw.pages if hp in mw.copies]
    for across in (False, True):
        ds = {p: Dedupe(DedupeConfig(enabled=True, exact_across_ring=across), p) for p in ids}
        sent = nbytes = alone = texts = 0
        for n, (host, path) in enumerate(order):
            body = mw.pages[(host, path)]
            url = f"http://{host}:8080{path}"
            me = ring.owner(host_key(url))
            fp = fingerprint(visible_text(LexborHTMLParser(body)))
            texts += fp is not None
            out = ds[me].check(url, hashlib.sha1(body).digest(), fp, float(n), ring.owner)
            if not isinstance(out, Ask):
                continue
            for owner, q in out.queries:
                a = ds[owner].serve(q)
                if owner != me:  # a query to this peer is answered in place (peer.core.door.peer rule 5)
                    sent += 2
                    alone += 2 * (not q.bands)
                    nbytes += len(wire.encode(wire.NearQuery("r", me, q.bands, q.fingerprint, q.url, me,
                                                             q.seen_at, q.says, q.digest)))
                    nbytes += len(wire.encode(wire.NearAnswer("r", owner, a.url, a.duplicate_of, a.distance,
                                                              a.superseded, a.exact, a.exact_superseded)))
                ds[me].answer(owner, a)
        exact = sum(d.stats.exact for d in ds.values())
        print(f"exact_across_ring={str(across).lower()}: {len(order)} pages over {peers} peers, {sent} band "
              f"messages ({sent / len(order):.2f} a page, {nbytes / len(order):.1f} bytes a page; {alone} of them "
              f"for the digests of the {len(order) - texts} pages without a SimHash), {exact} exact verdicts")


def _library_variants() -> dict[str, Callable[[bytes], int | None]]:
    """Main-content extractors from PyPI, where importable (their own parse included in their cost)."""
    out: dict[str, Callable[[bytes], int | None]] = {}
    try:
        import trafilatura  # type: ignore[import-not-found]

        def traf(b: bytes) -> int | None:
            text = trafilatura.extract(b.decode("utf-8", "replace"), fast=True, include_comments=False) or ""
            return fingerprint(text, fold_digits=True)
        out["trafilatura (fast)"] = traf
    except ImportError:
        print("bench_dedupe: trafilatura not importable; left out", file=sys.stderr)
    try:
        from resiliparse.extract.html2text import extract_plain_text  # type: ignore[import-not-found]
        from resiliparse.parse.html import HTMLTree  # type: ignore[import-not-found]

        def resili(b: bytes) -> int | None:
            return fingerprint(extract_plain_text(HTMLTree.parse_from_bytes(b, "utf-8"), main_content=True),
                               fold_digits=True)
        out["resiliparse main_content"] = resili
    except ImportError:
        print("bench_dedupe: resiliparse not importable; left out", file=sys.stderr)
    try:
        import justext  # type: ignore[import-not-found]
        stop = justext.get_stoplist("English")

        def jt(b: bytes) -> int | None:
            paras = justext.justext(b, stop, encoding="utf-8")
            return fingerprint(" ".join(p.text for p in paras if not p.is_boilerplate), fold_digits=True)
        out["justext"] = jt
    except ImportError:
        print("bench_dedupe: justext not importable; left out", file=sys.stderr)
    return out


def real(per_site: int, seed: int, k: int = 3, libraries: bool = False) -> int:
    from localweb.judges.duplicates import SAME_CONTENT, by_distance, summary, table
    from localweb.sitegraph.realdocs import SITES, Kind, corpus, missing
    from peer.core.dedupe.maintext import main_text

    gone = [m for s in SITES if (m := missing(s))]
    for m in gone:
        print(f"bench_dedupe: {m}", file=sys.stderr)
    if len(gone) == len(SITES):
        return 2
    c = corpus(per_site, seed=seed)
    print(f"corpus: {len(c.originals)} originals ({per_site} a site, seed {seed}), {len(c.copies)} copies; "
          f"negatives: every pair of " + ", ".join(f"{len(p)} {s}" for s, p in c.pages.items()) + " pages")
    variants: dict[str, Callable[[bytes], int | None]] = {
        "old: visible text": lambda b: fingerprint(visible_text(LexborHTMLParser(b))),
        "main content": lambda b: fingerprint(main_text(LexborHTMLParser(b))),
        "visible text, digits folded": lambda b: fingerprint(visible_text(LexborHTMLParser(b)), fold_digits=True),
        "new: main content, digits folded": lambda b: fingerprint(main_text(LexborHTMLParser(b)), fold_digits=True),
    }
    own = set(variants)  # these read the tree the engine parsed; a library parses the page itself
    if libraries:
        variants.update(_library_variants())
    reports = {name: by_distance(c, fn, k) for name, fn in variants.items()}
    names = list(reports)
    print(f"\nrecall at k = {k} by kind (copies within k of their original), and the largest distance:")
    rows = []
    for kind in Kind:
        cells = []
        for n in names:
            ds = reports[n].distances[kind]
            worst = max((d for d in ds if d is not None), default=0)
            cells.append(f"{reports[n].recall(kind):.2f} (max {worst})")
        rows.append([kind.value, *cells])
    rows.append(["**precision**", *(f"{reports[n].precision():.3f}" for n in names)])
    rows.append([f"false pairs within k (content Jaccard < {SAME_CONTENT})",
                 *(str(len(reports[n].false_pairs)) for n in names)])
    rows.append([f"pairs within k that say the same (Jaccard >= {SAME_CONTENT})",
                 *(str(len(reports[n].close) - len(reports[n].false_pairs)) for n in names)])
    print(table(rows, ["kind", *names]))
    print("\nnegatives (two pages of one site): distance min / 1st percentile / median; the nearest two that do "
          f"not say the same (content Jaccard < {SAME_CONTENT}); pages without a fingerprint")
    rows = [[site, str(len(c.pages[site]) * (len(c.pages[site]) - 1) // 2),
             *(f"{summary(reports[n].negatives[site])}; nearest different {reports[n].nearest_different.get(site)}; "
              f"{reports[n].unfingerprinted[site]} none" for n in names)]
            for site in c.pages]
    print(table(rows, ["site", "pairs", *names]))
    for n in names:
        close = reports[n].close
        for site, a, b, d, j in close[:12]:
            print(f"  {n}: {site} {a} ~ {b}: distance {d}, content Jaccard {j:.2f}"
                  + ("  FALSE" if j < SAME_CONTENT else ""))
        if len(close) > 12:
            print(f"  {n}: ... and {len(close) - 12} more pairs within k")
    print("\nCPU us a page (process time, best of 3; text + fingerprint; lexbor's parse excluded, as the engine "
          "has the tree already; a library's own parse included):")
    rows = []
    for site, pages in c.pages.items():
        sample = [p.body for p in pages[:150]]
        trees_cost = cpu_us(LexborHTMLParser, sample, 3)
        cells = [f"{cpu_us(fn, sample, 3) - (trees_cost if n in own else 0):.0f}" for n, fn in variants.items()]
        rows.append([site, f"{statistics.mean(map(len, sample)) / 1024:.0f} KiB", f"{trees_cost:.0f}", *cells])
    print(table(rows, ["site (first 150 pages)", "size", "parse (lexbor)", *names]))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shingles", default="1,2,3,4")
    ap.add_argument("--table", type=int, default=100_000)
    ap.add_argument("--messages", action="store_true", help="only the band messages a page costs (see above)")
    ap.add_argument("--real", action="store_true", help="the real documentation pages and their labelled copies")
    ap.add_argument("--per-site", type=int, default=25)
    ap.add_argument("--libraries", action="store_true",
                    help="with --real: also trafilatura, resiliparse and justext, where importable (not dependencies)")
    a = ap.parse_args(argv)
    if a.messages:
        messages()
        return 0
    if a.real:
        return real(a.per_site, a.seed, libraries=a.libraries)
    try:
        shingles = [int(s) for s in a.shingles.split(",")]
    except ValueError:
        print(f"bench_dedupe: --shingles: expected integers like 1,2,3, not {a.shingles!r}", file=sys.stderr)
        return 2
    c = corpus(a.pages, seed=a.seed)
    costs(c.originals)
    print(f"\ncorpus: {len(c.originals)} originals, {len(c.copies)} copies ({len(Change)} changes each)")
    for s in shingles:
        quality(c.originals, c.copies, s)
    if a.table:
        table_bytes(a.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
