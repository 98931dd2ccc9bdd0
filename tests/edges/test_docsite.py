"""The worked example of docs/scoping.md: one section of a documentation site, through its sitemap.

The example's config is read from the guide itself (its ```toml block), with
the port and data_dir of this run, and crawled by ``python -m peer`` against
``docs.web.test`` (localweb/sitegraph/docsite.py). Each claim the guide makes is judged
from the web server's request log and the results file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from clirun import WebThread, run_main, web_thread
from localweb.sitegraph import docsite

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "scoping.md"


@pytest.fixture(scope="module")
def web() -> Iterator[WebThread]:
    with web_thread(hosts=1) as w:
        yield w


def example_toml(tmp_path: Path, port: int) -> Path:
    """The guide's ``library.toml``, for this run's port and a data_dir of its own."""
    text = GUIDE.read_text()
    block = re.search(r"`library.toml`:\n\n```toml\n(.*?)```", text, re.S)
    assert block is not None, "docs/scoping.md lost its worked example"
    toml = block.group(1).replace(":8080", f":{port}").replace('"data/library"', f'"{tmp_path / "library"}"')
    path = tmp_path / "library.toml"
    path.write_text(toml)
    return path


def test_the_guide_s_library_crawl_fetches_the_library_and_nothing_else(tmp_path, web):
    from peer.commands.cli import main

    since = len(web.requests())
    toml = example_toml(tmp_path, web.port)
    res = run_main(main, ["--ring", str(toml), "--progress", "1"])
    assert res.returncode == 0, res.stderr
    got = Counter(r.target for r in web.requests()[since:] if r.host == docsite.DOCS_HOST)
    library = {"/library/"} | {f"/library/{m}.html" for m in (*docsite.LIBRARY, *docsite.LIBRARY_UNLINKED)}
    pages = {t for t in got if t not in ("/robots.txt", "/sitemap.xml")}
    # The 20 library pages, the three only the sitemap lists among them, each once...
    assert pages == library, sorted(pages ^ library)
    assert all(got[t] == 1 for t in library), got
    # ...through robots.txt's Sitemap: line, read once each.
    assert got["/robots.txt"] == 1 and got["/sitemap.xml"] == 1
    # The summary counts what the rules and the extensions left out.
    summary = res.stdout
    said = next(line for line in summary.splitlines() if line.startswith("  not requested: "))
    causes = dict((k, int(n)) for k, n in (c.rsplit(" ", 1) for c in said.split(": ", 1)[1].split(", ")))
    assert set(causes) == {"rules", "skip_extensions", "robots"}, said
    assert causes["robots"] == len(library) - 1  # each module's /_sources/library/ text file
    # The results say which pages the sitemap listed, with its lastmod: every one of them, the
    # pages the seed's links reached before the sitemap was read as well as those it alone lists.
    with duckdb.connect(str(tmp_path / "library" / "pages.duckdb"), read_only=True) as con:
        listed = con.execute("SELECT url FROM pages WHERE sitemap_lastmod IS NOT NULL").fetchall()
    origin = f"http://{docsite.DOCS_HOST}:{web.port}"
    unlinked = {f"{origin}/library/{m}.html" for m in docsite.LIBRARY_UNLINKED}
    assert unlinked <= {u for (u,) in listed}
    assert {u for (u,) in listed} == {origin + t for t in library}, sorted({origin + t for t in library}
                                                                          ^ {u for (u,) in listed})


def test_the_guide_s_try_line_is_what_try_says(tmp_path, web):
    from peer.commands.cli import main

    toml = example_toml(tmp_path, web.port)
    res = run_main(main, ["try", f"http://{docsite.DOCS_HOST}:{web.port}/tutorial/1.html",
                          "--ring", str(toml)])
    said = next(line for line in res.stdout.splitlines() if line.startswith("scope:"))
    assert said in GUIDE.read_text(), said


def test_try_on_the_sitemap_says_the_crawl_reads_it_though_the_rules_refuse_it_as_a_page(tmp_path, web):
    # The crawl above reads /sitemap.xml (robots.txt names it) though no
    # include rule matches it; try said "out of scope ... not crawled".
    from peer.commands.cli import main

    toml = example_toml(tmp_path, web.port)
    url = f"http://{docsite.DOCS_HOST}:{web.port}/sitemap.xml"
    since = len(web.requests())
    res = run_main(main, ["try", url, "--ring", str(toml), "--links", "1"])
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    scope = next(line for line in lines if line.startswith("scope:"))
    assert "not crawled" not in scope and "out of scope" not in scope
    assert f"a sitemap (robots.txt of {docsite.DOCS_HOST}:{web.port} names it): the crawl reads it" in scope
    assert any(line.startswith("sitemap:") and "urlset" in line for line in lines), res.stdout
    asked = [r.target for r in web.requests()[since:]]
    assert asked == ["/robots.txt", "/sitemap.xml"]
    # A page the rules refuse is still out of scope, after the same robots.txt read.
    res = run_main(main, ["try", url.replace("sitemap.xml", "tutorial/"), "--ring", str(toml)])
    assert ("scope:      out of scope: excluded by crawl.rules: no rule matches, and the list has "
            "include rules: not crawled") in res.stdout.splitlines()
