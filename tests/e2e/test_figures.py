"""One crawl's figures agree, under the same names, on every surface a user reads.

A solo peer crawls a local web that has pages to fetch (a 404 among them),
requests that fail in two ways, a robots.txt exclusion and URLs out of scope.
When its crawl is over, and before it exits, the peer is held up so that
``python -m ring status --json`` and its Prometheus metrics can be read with
their final figures; then it prints its summary and writes stats.json, and
the results are merged and reported. Each surface must give the same pages,
failed requests by kind, URLs not requested by cause, and drops
(``ring.vocabulary``), and the server's request log must agree on pages.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

from clirun import run_main, web_thread
from ringharness import free_ports

from ring.vocabulary import Family

#: How long the held peer waits for the surfaces to be read before it goes on.
HOLD = 60.0


def _counts(text: str) -> dict[str, int]:
    """``kind n, kind n`` (the summary, ``ring status``) as a mapping; "none" is empty."""
    text = text.strip()
    if text == "none":
        return {}
    return {k: int(n) for k, n in (part.rsplit(" ", 1) for part in text.split(", "))}


def summary_figures(stdout: str) -> dict[str, Any]:
    """The end-of-run summary's figures, read as a user reads them."""
    pages = re.search(r"^crawl finished .*: (\d+) pages fetched this run", stdout, re.M)
    failed = re.search(r"^  failed: (.*?)( \(internal: .*\))?$", stdout, re.M)
    never = re.search(r"^  not requested: (.*)$", stdout, re.M)
    assert pages and failed and never, stdout
    return {"pages": int(pages.group(1)), "failed": _counts(failed.group(1)),
            "not_requested": _counts(never.group(1))}


def metric_figures(text: str) -> dict[str, Any]:
    """The scrape's figures: ringcrawl_pages_total and the labelled families."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, Any] = {"failed": {}, "not_requested": {}, "drops": {}}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "ringcrawl_pages_total":
                out["pages"] = int(s.value)
            for key, label in (("failed", "kind"), ("not_requested", "cause"), ("drops", "reason")):
                if s.name == f"ringcrawl_{key}_total":
                    out[key][s.labels[label]] = int(s.value)
    return out


def report_figures(page: str) -> dict[str, Any]:
    """The report's summary table: pages, failed by kind, not requested by cause."""
    def cell(key: str) -> str:
        m = re.search(rf'<tr id="s-{key}"><th>[^<]*</th><td>([^<]*)</td></tr>', page)
        assert m, f"no summary row {key}"
        return html.unescape(m.group(1))

    def by(text: str) -> dict[str, int]:
        if text == "none":
            return {}
        return {k: int(n.replace(",", "")) for k, n in (p.rsplit(": ", 1) for p in text.split(" · "))}

    return {"pages": int(cell("pages").replace(",", "")), "failed": by(cell("failed")),
            "not_requested": by(cell("not-requested"))}


def test_one_crawls_figures_agree_across_every_surface(tmp_path, monkeypatch):
    from peer.engine.crawler import Crawler

    status_port, metrics_port = free_ports(2)
    with web_thread(hosts=1, pages=4, links=3, shop=False) as web:
        port = web.port
        site, bad = f"http://s001.web.test:{port}", f"http://bad.web.test:{port}"
        seeds = [
            f"{site}/",                                # pages, and links out of scope among them
            f"{site}/private/p1.html",                 # s001's robots.txt disallows /private/
            f"{bad}/status/404",                       # a 404 is a page fetched
            f"{bad}/big-cl",                           # over crawl.max_body: failed, too_large
            f"{bad}/huge-header?kb=200",               # a head past h11's limit: failed, protocol
            f"http://elsewhere.example:{port}/",        # out of crawl.allow_hosts: scope
        ]
        toml = tmp_path / "cluster.toml"
        toml.write_text(f"""
[ring]
name = "figures"

[[peer]]
id = "solo"
address = "tcp://127.0.0.1:{status_port}"
metrics_address = "127.0.0.1:{metrics_port}"
data_dir = "{tmp_path / 'solo'}"

[crawl]
seeds = {json.dumps(seeds)}
allow_hosts = ["*.web.test"]
allow_private = true
timeout = 5.0
max_body = 100000

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 10000
""")
        # Hold the peer after its crawl, its status and metrics still served.
        ended, read = threading.Event(), threading.Event()
        run = Crawler.run

        async def run_then_hold(self):  # type: ignore[no-untyped-def]
            import trio

            summary = await run(self)
            ended.set()
            await trio.to_thread.run_sync(read.wait, HOLD)
            return summary

        monkeypatch.setattr(Crawler, "run", run_then_hold)
        got: dict[str, Any] = {}

        def read_surfaces() -> None:
            try:
                if not ended.wait(HOLD):
                    return
                status = subprocess.run([sys.executable, "-m", "ring", "status", "--json", "--timeout", "5",
                                         "--ring", str(toml)],
                                        capture_output=True, text=True, timeout=30)
                got["status"] = status
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
                    got["metrics"] = r.read().decode()
            finally:
                read.set()

        reader = threading.Thread(target=read_surfaces, name="surfaces", daemon=True)
        reader.start()
        from peer.commands.cli import main as peer_main

        res = run_main(peer_main, ["--ring", str(toml), "--progress", "5"])
        reader.join(HOLD)
        requests = [r for r in web.requests() if r.target != "/robots.txt"]
    assert res.returncode == 0, res.stderr

    summary = summary_figures(res.stdout)
    stats = json.loads((tmp_path / "solo" / "stats.json").read_text())
    status = got["status"]
    assert status.returncode == 0, status.stderr
    (member,) = json.loads(status.stdout)["members"]
    metrics = metric_figures(got["metrics"])
    merged = tmp_path / "crawl.duckdb"
    from peer.commands.merge import main as merge_main
    from peer.commands.report import main as report_main

    assert run_main(merge_main, [str(tmp_path / "solo" / "pages.duckdb"), "-o", str(merged)]).returncode == 0
    rep = run_main(report_main, [str(merged), "-o", str(tmp_path / "report")])
    assert rep.returncode == 0, rep.stderr
    report = report_figures((tmp_path / "report" / "index.html").read_text(encoding="utf-8"))

    # The web this crawl met: each family has something in it.
    assert summary["pages"] == len(requests) > 5  # the server's log is the judge of requests
    assert {"too_large", "protocol"} <= set(summary["failed"]), summary
    assert summary["not_requested"].get("robots", 0) >= 1 and summary["not_requested"].get("scope", 0) >= 1
    assert "robots" not in summary["failed"]  # an exclusion is never a failure
    # One figure, one name, one number, on every surface.
    keys = [f.value for f in (Family.PAGES, Family.FAILED, Family.NOT_REQUESTED)]
    surfaces = {"stats.json": stats, "ring status --json": member, "metrics": metrics, "report": report}
    want = {k: summary[k] for k in keys}
    for name, doc in surfaces.items():
        assert {k: doc[k] for k in keys} == want, name
    # Drops are refused input only: none came, and neither status nor metrics shows any.
    assert member[Family.DROPS.value] == metrics["drops"] == {}
