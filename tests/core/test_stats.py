"""peer.core.run.stats: the end-of-run summary and stats.json, and the cluster's sum of them."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from peer.core.run.stats import crawl_stats, render_summary, requested_errors, sum_stats


def summary(**kw) -> SimpleNamespace:
    base = dict(pages=150, requested=100, fetched=95, bytes=2**20, wire_bytes=2**20, by_status=Counter({200: 90, 404: 5}),
                errors=Counter({"timeout": 5, "robots": 45, "internal": 1}),
                not_requested=Counter({"robots": 45}), out_of_scope=7, retries=3, robots_fetches=2,
                items=4, items_by_table=Counter({"items_book": 4}), extract_errors=0,
                internal=Counter({"ValueError": 1}), limits="limits: none hit", details=[],
                elapsed=10.0, stop_reason="frontier empty", by_site=Counter(),
                directives=Counter({"noindex": 2, "links_frame": 3}), invalid_status=1,
                sitemaps_fetched=3, sitemap_urls=120, sitemap_failed=Counter({"http_404": 1}),
                sitemap_drops=Counter({"too_many_urls": 1, "entities": 2}))
    base.update(kw)
    return SimpleNamespace(**base)


def test_pages_are_requests_and_exclusions_are_apart():
    text = render_summary(summary())
    assert text.startswith("crawl finished (frontier empty) in 10s: 100 pages fetched this run, 10.0 pages/s")
    assert "  failed: timeout 5, internal 1 (internal: ValueError 1)\n" in text and "robots: 45" not in text
    assert "  not requested: robots 45, scope 7\n" in text
    assert "items: 4 (items_book 4)" in text
    assert "directives: links_frame 3, noindex 2" in text
    assert "invalid status codes (handled as 5xx): 1" in text
    assert "directives" not in render_summary(summary(directives=Counter(), invalid_status=0))
    assert "[[site]]" not in text  # no block, no line


def test_the_summary_says_its_sizes_are_decoded_and_gives_the_wire_size():
    # 8.0 MiB of pages came gzipped as 2.6 MiB; the summary said "8.0 MiB" alone.
    first = render_summary(summary(bytes=8 * 2**20, wire_bytes=int(2.6 * 2**20))).splitlines()[0]
    assert first.endswith("10.0 pages/s, 8.0 MiB of bodies decoded, 2.6 MiB on the wire")
    same = render_summary(summary()).splitlines()[0]
    assert same.endswith("10.0 pages/s, 1.0 MiB of bodies")  # nothing coded: one figure
    # Measured: 21 pages of 1.1 MiB gzipped to 7,378 bytes said "0.0 MiB on the wire".
    small = render_summary(summary(bytes=1_145_833, wire_bytes=7_378)).splitlines()[0]
    assert small.endswith("1.1 MiB of bodies decoded, 7.2 KiB on the wire")


def test_pages_by_site_block_are_counted_where_an_operator_looks():
    s = summary(by_site=Counter({"site[1]": 7, "site[0]": 3}))
    assert "  pages by [[site]] block: site[0] 3, site[1] 7" in render_summary(s).splitlines()
    d = crawl_stats(s, peer="p1", ring="r", run=1, started=0.0, finished=1.0, cap_hits={})
    assert d["pages_by_site"] == {"site[0]": 3, "site[1]": 7}
    total = sum_stats([d, crawl_stats(summary(by_site=Counter({"site[0]": 2})), peer="p2", ring="r", run=1,
                                      started=0.0, finished=1.0, cap_hits={})])
    assert total["pages_by_site"] == {"site[0]": 5, "site[1]": 7}


def test_requested_errors_leave_out_rows_without_a_request():
    assert requested_errors({"dns": 3, "robots": 2}, {"dns": 1, "robots": 2}) == {"dns": 2}


def test_the_summary_counts_a_caps_urls_as_not_requested():
    text = render_summary(summary(caps=Counter({"max_urls_per_host": 4, "max_links_per_page": 9})))
    assert "  not requested: robots 45, scope 7, max_urls_per_host 4\n" in text


def doc(peer: str, start: float, end: float, pages: int) -> dict:
    return crawl_stats(summary(requested=pages), peer=peer, ring="r", run=1, started=start, finished=end,
                       cap_hits={"max_url_length": 2, "max_links_per_page": 9}, forwarded_out=5,
                       forwarded_in=4, config={"crawl": {"seeds": []}})


def test_one_peers_stats():
    d = doc("p1", 1_000_000.0, 1_000_010.0, 100)
    assert d["start_time"] == "1970-01-12T13:46:40+00:00" and d["elapsed_seconds"] == 10.0
    assert d["pages"] == 100 and d["pages_per_second"] == 10.0
    assert d["status_counts"] == {"200": 90, "404": 5}
    assert d["failed"] == {"internal": 1, "timeout": 5}
    # URLs never requested, whether they left a row (robots) or not (scope, a cap)
    assert d["not_requested"] == {"robots": 45, "scope": 7, "max_url_length": 2} and d["links_cut"] == 9
    assert not {"errors", "dropped", "robots_excluded"} & set(d)
    assert d["items"] == {"items_book": 4} and d["run_config"] == {"crawl": {"seeds": []}}
    assert d["directives"] == {"links_frame": 3, "noindex": 2} and d["invalid_status"] == 1
    # Sitemaps are fetched apart from pages; what they sent that was refused is a drop.
    assert d["sitemaps"] == {"fetched": 3, "urls": 120, "failed": {"http_404": 1},
                             "drops": {"entities": 2, "too_many_urls": 1}}


def test_the_clusters_stats_are_summed_over_the_span():
    total = sum_stats([doc("p1", 1_000_000.0, 1_000_010.0, 100), doc("p2", 1_000_005.0, 1_000_020.0, 60)])
    assert total["peers"] == ["p1", "p2"] and total["elapsed_seconds"] == 20.0
    assert total["pages"] == 160 and total["pages_per_second"] == 8.0
    assert total["status_counts"] == {"200": 180, "404": 10}
    assert total["not_requested"] == {"robots": 90, "scope": 14, "max_url_length": 4}
    assert total["forwarded_out"] == 10
    assert total["sitemaps"] == {"fetched": 6, "urls": 240, "failed": {"http_404": 2},
                                 "drops": {"entities": 4, "too_many_urls": 2}}
    assert total["finish_reasons"] == {"frontier empty": 2}
    assert total["directives"] == {"links_frame": 6, "noindex": 4} and total["invalid_status"] == 2
    assert total["run_config"] == {"crawl": {"seeds": []}}


def test_a_resumed_crawls_stats_keep_each_earlier_runs_figures():
    from peer.core.run.stats import keep_earlier_runs

    def run(n: int, start: float, pages: int, peer: str = "p1") -> dict:
        return crawl_stats(summary(requested=pages), peer=peer, ring="r", run=n, started=start,
                           finished=start + 10, cap_hits={}, config={"crawl": {"seeds": [str(n)]}})

    first = keep_earlier_runs(run(1, 1_000.0, 30), None)
    assert "earlier_runs" not in first
    second = keep_earlier_runs(run(2, 2_000.0, 50), first)
    third = keep_earlier_runs(run(3, 3_000.0, 20), second)
    assert [r["run"] for r in third["earlier_runs"]] == [1, 2]
    assert [r["pages"] for r in third["earlier_runs"]] == [30, 50] and third["pages"] == 20
    assert all("run_config" not in r for r in third["earlier_runs"])   # the run in force is this one's
    # Another peer's file, a later run's, or no run number: not this crawl's past.
    assert "earlier_runs" not in keep_earlier_runs(run(2, 2_000.0, 5), run(1, 1_000.0, 5, peer="p2"))
    assert "earlier_runs" not in keep_earlier_runs(run(1, 2_000.0, 5), run(4, 1_000.0, 5))
    assert "earlier_runs" not in keep_earlier_runs(run(2, 2_000.0, 5), {"peer": "p1", "run": "1"})
    # The cluster's file lists every peer's earlier runs, oldest first, and sums the last ones.
    other = keep_earlier_runs(run(2, 2_500.0, 7, peer="p2"), run(1, 1_500.0, 9, peer="p2"))
    total = sum_stats([third, other])
    assert [(r["peer"], r["run"]) for r in total["earlier_runs"]] == [("p1", 1), ("p2", 1), ("p1", 2)]
    assert total["pages"] == 27
