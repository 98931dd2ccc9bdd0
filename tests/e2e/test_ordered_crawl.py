"""End to end: each host's queue served by priority (frontier rule 11), judged by the server's log.

One peer in this process crawls a small web built for the purpose on the
hostile web's server (``HostileWeb.route``), and the test reads the order in
which the server saw the requests: what a site owner would check.
"""

from __future__ import annotations

from localweb import HostileWeb, serve_in_thread
from localweb.hostile.wire import Reply, html, reply
from localweb.processes.peerrun import Run, cluster_toml, run_in_process

BOUNDED = 60.0
ORDERED = "ordered.test"
CHAIN = "chain.test"
#: ordered.test: "/" links L1 pages, each links two L2 pages, each one L3 page.
L1 = [f"/l1-{i}" for i in range(12)]
L2 = [f"/l2-{i}-{j}" for i in range(12) for j in range(2)]
#: Linked by chain.test's third page only: depth 3 on ordered.test, found while
#: ordered.test's own depth-1 pages are still being fetched.
DEEP = [f"/deep-{i}" for i in range(20)]


def assert_ended(run: Run) -> None:
    assert not run.timed_out, f"the crawl did not end within {BOUNDED:.0f}s\n{run.stderr()}"
    assert run.codes == [0], run.stderr()


def depth_web() -> HostileWeb:
    web = HostileWeb()

    def route(host: str, target: str) -> Reply | None:
        if target == "/robots.txt":
            return reply(404, b"")
        if host == ORDERED:
            if target == "/":
                return reply(200, html("root", L1))
            if target.startswith("/l1-"):
                i = target.removeprefix("/l1-")
                return reply(200, html(target, [f"/l2-{i}-{j}" for j in range(2)]))
            if target.startswith("/l2-"):
                return reply(200, html(target, ["/l3" + target.removeprefix("/l2")]))
            return reply(200, html(target))
        if host == CHAIN:
            nxt = {"/": ["/a"], "/a": ["/b"], "/b": [web.url(ORDERED, p) for p in DEEP]}
            return reply(200, html(target, nxt.get(target, [])))
        return None

    web.route = route
    return web


def test_a_depth_ordered_crawl_fetches_every_page_of_depth_two_before_any_deeper_one(tmp_path):
    web = depth_web()
    with serve_in_thread(web):
        seeds = [web.url(ORDERED, "/"), web.url(CHAIN, "/")]
        # Room for ordered.test's 37 pages of depth <= 2, chain.test's 3 and a few deeper.
        toml = cluster_toml(tmp_path, seeds, sections={"crawl": {"max_pages": 45}})
        run = run_in_process(toml, timeout=BOUNDED)
    assert_ended(run)
    order = [e.path for e in web.requests(ORDERED) if e.path != "/robots.txt"]
    shallow = {"/", *L1, *L2}
    assert len(order) == 42 and shallow <= set(order), order  # max_pages: 45 with chain.test's 3
    first_deep = min(i for i, p in enumerate(order) if p not in shallow)
    assert set(order[:first_deep]) == shallow, order


def test_fifo_keeps_the_order_found(tmp_path):
    """``order = "fifo"``: the deep URLs found early are fetched before the later depth-2 ones."""
    web = depth_web()
    with serve_in_thread(web):
        seeds = [web.url(ORDERED, "/"), web.url(CHAIN, "/")]
        toml = cluster_toml(tmp_path, seeds, sections={"crawl": {"max_pages": 45},
                                                       "frontier": {"order": "fifo"}})
        run = run_in_process(toml, timeout=BOUNDED)
    assert_ended(run)
    order = [e.path for e in web.requests(ORDERED) if e.path != "/robots.txt"]
    last_shallow = max(i for i, p in enumerate(order) if p in {"/", *L1, *L2})
    assert any(p.startswith("/deep-") for p in order[:last_shallow]), order


SITEMAPPED = "sitemapped.test"
#: (path, <priority>), in the sitemap's order: the priorities shuffled.
LISTED = [(f"/p{i}", p) for i, p in enumerate([0.1, 1.0, 0.5, 0.1, 0.9, 0.5, 0.0, 1.0, 0.1, 0.8, 0.5, 0.0])]


def sitemap_web() -> HostileWeb:
    web = HostileWeb()

    def route(host: str, target: str) -> Reply | None:
        if host != SITEMAPPED:
            return None
        if target == "/robots.txt":
            return reply(200, f"User-agent: *\nDisallow:\n\nSitemap: {web.url(host, '/sitemap.xml')}\n".encode(),
                         content_type="text/plain")
        if target == "/sitemap.xml":
            urls = "".join(f"<url><loc>{web.url(host, p)}</loc><priority>{pr}</priority></url>\n"
                           for p, pr in LISTED)
            body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                    f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n')
            return reply(200, body.encode(), content_type="application/xml")
        return reply(200, html(target))

    web.route = route
    return web


def test_sitemap_priorities_reorder_a_hosts_queue(tmp_path):
    web = sitemap_web()
    with serve_in_thread(web):
        toml = cluster_toml(tmp_path, [web.url(SITEMAPPED, "/")])
        run = run_in_process(toml, timeout=BOUNDED)
    assert_ended(run)
    order = [e.path for e in web.requests(SITEMAPPED) if e.path.startswith("/p")]
    assert sorted(order) == sorted(p for p, _ in LISTED)  # each once
    prio = dict(LISTED)
    # Higher priorities first; equal boosts (0.9 and 1.0: +2; 0.0 and 0.1: -2) in the sitemap's order.
    expected = sorted((p for p, _ in LISTED), key=lambda p: -round((prio[p] - 0.5) * 4))
    assert order == expected, order


def test_try_shows_the_band_a_url_gets_and_why(tmp_path):
    from clirun import run_main

    from peer.commands.cli import main

    web = sitemap_web()
    with serve_in_thread(web):
        toml = cluster_toml(tmp_path, [web.url(SITEMAPPED, "/")],
                            sections={"frontier": {"priority": ["+1:*/p3"]}})
        page = run_main(main, ["try", web.url(SITEMAPPED, "/p3"), "--ring", str(toml)])
        # A [[site]] block's list replaces frontier.priority for its hosts.
        site = tmp_path / "site"
        site.mkdir()
        sited = cluster_toml(site, [web.url(SITEMAPPED, "/")], sections={"frontier": {"priority": ["+1:*/p3"]}})
        sited.write_text(sited.read_text() + '[[site]]\nhosts = ["sitemapped.test"]\npriority = ["-2:*/p*"]\n')
        by_site = run_main(main, ["try", web.url(SITEMAPPED, "/p3"), "--ring", str(sited)])
        host = run_main(main, ["--ring", str(sited), "--check", "--host", "sitemapped.test"])
        listed = run_main(main, ["try", web.url(SITEMAPPED, "/sitemap.xml"), "--ring", str(toml), "--links", "0"])
    assert page.returncode == 0 and listed.returncode == 0, page.stderr + listed.stderr
    assert ("priority:   band 3 of 0-15, lower served first in its host's queue "
            "(depth 0, +1 by frontier.priority[0] '*/p3')") in page.stdout.splitlines(), page.stdout
    by_url = {line.split()[0]: line for line in listed.stdout.splitlines() if line.startswith("  http")}
    assert by_url[web.url(SITEMAPPED, "/p1")].endswith(
        "band 2 of 0-15, lower served first in its host's queue (depth 0, sitemap <priority> 1: +2) (priority 1)")
    assert "(depth 0, sitemap <priority> 0.1: -2, +1 by frontier.priority[0] '*/p3')" in by_url[web.url(SITEMAPPED, "/p3")]
    assert ("priority:   band 6 of 0-15, lower served first in its host's queue "
            "(depth 0, -2 by site[0].priority[0] '*/p*')") in by_site.stdout.splitlines(), by_site.stdout
    assert "  priority -2 '*/p*' (site[0]: sitemapped.test)" in host.stdout.splitlines(), host.stdout


def test_check_shows_the_order_and_a_bad_value_is_one_line_and_exit_2(tmp_path):
    from clirun import run_main

    from peer.commands.cli import main

    toml = cluster_toml(tmp_path, ["http://ordered.test/"], sections={"frontier": {"priority": ["+2:*/docs/*"]}})
    res = run_main(main, ["--ring", str(toml), "--check"])
    assert res.returncode == 0, res.stderr
    assert ("   order: depth, each host's shallower URLs first, moved by sitemap <priority> and "
            "1 frontier.priority rule(s): '+2:*/docs/*'") in res.stdout.splitlines(), res.stdout
    for table, said in (({"order": "random"}, "frontier.order: expected 'depth' or 'fifo'"),
                        ({"priority": ["+9:*"]}, "frontier.priority[0]: expected a boost from -4 to +4")):
        toml = cluster_toml(tmp_path, ["http://ordered.test/"], sections={"frontier": table})
        res = run_main(main, ["--ring", str(toml), "--check"])
        assert res.returncode == 2 and said in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_a_site_blocks_priority_rules_reorder_its_hosts_queue(tmp_path):
    """``[[site]] priority``: ordered.test's depth-2 pages boosted +4 go before the depth-1
    ones still queued, so each L1 page's children are fetched before the next L1 page."""
    web = depth_web()
    with serve_in_thread(web):
        toml = cluster_toml(tmp_path, [web.url(ORDERED, "/")], sections={"crawl": {"max_pages": 37}})
        toml.write_text(toml.read_text() + '[[site]]\nhosts = ["ordered.test"]\npriority = ["+4:*/l2-*"]\n')
        run = run_in_process(toml, timeout=BOUNDED)
    assert_ended(run)
    order = [e.path for e in web.requests(ORDERED) if e.path != "/robots.txt"]
    assert order[:7] == ["/", "/l1-0", "/l2-0-0", "/l2-0-1", "/l1-1", "/l2-1-0", "/l2-1-1"], order
