"""The crawls docs/first-crawl.md walks through print the summaries it shows.

The first crawl (``solo.toml``, also in the README) and "Crawl your own
site" (the page's ``mysite.toml``) are run as the page says, on the local
web the page starts (``scripts/webfarm.py --hosts 3 --pages 40``), in this
process; each summary must equal the page's but for the run time, the rate
and the data_dir's place. A page that showed 281 pages where the same
command gave 251 fails here. Slow for a test file: two crawls of ~7 s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from localweb.processes.peerrun import run_in_process
from tests.support.clirun import WebThread, web_thread

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "first-crawl.md"


@pytest.fixture(scope="module")
def web() -> Iterator[WebThread]:
    # scripts/webfarm.py --port 8080 --hosts 3 --pages 40, its other options at their defaults
    with web_thread(hosts=3, pages=40, links=100, shop_products=40) as w:
        yield w


def fenced_after(text: str, start: int, opening: str) -> str:
    """The body of the first fenced block opened by ``opening`` at or after ``start``."""
    i = text.index(opening + "\n", start) + len(opening) + 1
    return text[i:text.index("```", i)]


def summary_after(text: str, start: int) -> list[str]:
    """The summary (a fenced block's lines from ``crawl finished`` on) after ``start``.

    Its ``results:`` and ``stats:`` lines are python -m peer's, not the
    crawl's: they are checked against the summary's page count instead.
    """
    i = text.index("\ncrawl finished", start) + 1  # after the progress lines, if any
    lines = comparable(text[i:text.index("```", i)], "")
    pages = int(re.search(r"(\d+) pages fetched this run", lines[0]).group(1))
    tail = [line for line in lines if line.startswith(("results:", "stats:"))]
    assert f": {pages} pages in all, {pages} fetched this run" in tail[0], tail
    return [line for line in lines if line not in tail]


def comparable(summary: str, data_root: str) -> list[str]:
    """A summary's lines without what changes from run to run: time, rate, where data_dir is."""
    if data_root:
        summary = summary.replace(data_root.rstrip("/") + "/", "")
    summary = re.sub(r" in [0-9.]+(?:m[0-9]+)?s: ", " in T: ", summary)
    summary = re.sub(r"[0-9.]+ pages/s", "R pages/s", summary)
    return [line for line in summary.strip().splitlines() if line.strip()]


def crawled(toml_text: str, port: int, tmp_path: Path) -> list[str]:
    toml = tmp_path / "crawl.toml"
    toml.write_text(toml_text.replace(":8080", f":{port}"))
    run = run_in_process(toml, timeout=90.0)
    (peer,) = run.peers
    assert peer.code == 0 and not run.timed_out, peer.err.read_text()[-2000:]
    return comparable(peer.out.read_text(), str(tmp_path))


def test_the_first_crawl_prints_the_summary_the_readme_and_the_guide_show(tmp_path, web):
    got = crawled((ROOT / "solo.toml").read_text(), web.port, tmp_path)
    for page in (GUIDE, ROOT / "README.md"):
        assert summary_after(page.read_text(), 0) == got, f"{page.name}'s first crawl is out of date"
    # A solo crawl of a site smaller than max_pages: its ETA counts the
    # queue (the guide's "ETA 0.6s (the 11 queued)"), not max_pages.
    log = (tmp_path / "solo.err").read_text()
    assert re.search(r"of max_pages 500, ETA [0-9.]+s \(the [0-9,]+ queued\)", log), log[-3000:]


def test_crawl_your_own_site_prints_what_the_guide_shows_and_the_server_saw(tmp_path, web):
    text = GUIDE.read_text()
    start = text.index("## Crawl your own site")
    config = fenced_after(text, start, "```toml")
    since = len(web.requests())
    got = crawled(config, web.port, tmp_path)
    assert summary_after(text, start) == got
    # "Your server's access log should show the same 58 requests (and one
    # for robots.txt), each with the user_agent above."
    seen = web.requests()[since:]
    pages = int(re.search(r"(\d+) pages fetched this run", "\n".join(got)).group(1))
    assert len([r for r in seen if r.target != "/robots.txt"]) == pages
    assert [r.target for r in seen].count("/robots.txt") == 1
    agent = re.search(r'user_agent = "([^"]+)"', config).group(1)
    assert {r.agent for r in seen} == {agent}
    assert f"same {pages} requests" in text[start:]
