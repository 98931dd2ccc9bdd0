"""Page requisites end to end: a crawl that archives pages with their stylesheets and images, replayed.

One peer crawls styled.test (localweb/hostile/styled.py: pages whose
stylesheet ``@import``s another and names a font and a background, a
favicon, a script, images with a ``srcset``, one image on another host out
of the crawl's scope) in this process, with ``[warc] requisites`` on and
the host paced at :data:`PER_MINUTE`. Then it is judged three ways, each by
something nobody here wrote or by the site owner's log:

- the web server's request log: every requisite fetched exactly once (the
  stylesheet every page names, once; a ``.png`` that ``skip_extensions``
  leaves out as a link, fetched as an image), the CDN's image by the host's
  owner, and no more requests in any 1 s or 5 s window than the host's
  ceiling (localweb/judges/politeness.py);
- pywb (tests/support/replay.py) serving the WARC files through our merged
  index: the page's HTML refers to its stylesheet and images rewritten into
  the archive, and those addresses answer 200 from the collection with the
  bytes the site served;
- ``ringcrawl-merge --wacz`` packages the archive, ``wacz validate``
  (py-wacz) accepts it, and pywb replays the page's stylesheet and image
  from the package (``wb-manager add --unpack-wacz``, which takes the
  package's own index).

A ring of two peers in this process, named so that styled.test and the CDN
host have different owners, shows a requisite found at one peer fetched by
its host's owner (its capture in that peer's WARC file), under the same
politeness.

The single peer's crawl is made once for the module (about 5 s of requests
at 4 a second); pywb and py-wacz come from the tools venv replay.py installs
once. The file takes about 19 s on the 2-core box (the ring's crawl 6.5 s,
the WACZ checks 4.7 s, pywb 1.4 s).
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from localweb import HostileWeb, serve_in_thread
from localweb.hostile import styled
from localweb.hostile.server import LogEntry
from localweb.judges.politeness import ceiling, worst
from localweb.processes.peerrun import Run, cluster_toml, run_in_process
from peer.commands.merge import main as merge_main
from peer.state.configfile import load_config
from ring.hashring import HashRing
from tests.support.clirun import run_main
from tests.support.replay import Wayback, tools
from tests.support.ringharness import Ring

PER_MINUTE = 240.0  # the host's setpoint: 4 requests a second
BOUNDED = 60.0


@dataclass
class Crawl:
    run: Run
    log: list[LogEntry]
    port: int
    data: Path
    tmp: Path


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Crawl:
    tmp = tmp_path_factory.mktemp("styled")
    web = HostileWeb()
    with serve_in_thread(web):
        toml = cluster_toml(tmp, [web.url(styled.STYLED_HOST, "/")], sections={
            "crawl": {"allow_hosts": [styled.STYLED_HOST]},  # the CDN is out of scope: only a requisite reaches it
            "politeness": {"rate": PER_MINUTE, "initial_delay": 0.25, "window": 2.0},
            "warc": {"enabled": True, "requisites": True}})
        run = run_in_process(toml, timeout=BOUNDED)
        log = list(web.log)
        port = web.port
    return Crawl(run, log, port, tmp / "p1", tmp)


def test_each_requisite_is_fetched_once_within_the_hosts_rate(crawl: Crawl) -> None:
    run = crawl.run
    assert not run.timed_out and run.codes == [0], run.peers[0].err.read_text()
    fetched: dict[str, int] = {}
    for e in crawl.log:
        if e.target != "/robots.txt":
            url = f"http://{e.host}:{crawl.port}{e.target}"
            fetched[url] = fetched.get(url, 0) + 1
    want = styled.requisites(crawl.port)
    pages = {f"http://{styled.STYLED_HOST}:{crawl.port}{p}" for p in styled.page_paths()}
    missing = sorted(set(want) - set(fetched))
    assert not missing, missing
    assert {u: n for u, n in fetched.items() if n != 1} == {}, "fetched more than once"
    assert set(fetched) == set(want) | pages, sorted(set(fetched) - set(want) - pages)
    summary = run.peers[0].stdout()
    print(summary)
    # Requisites are no pages (peer.core.crawl.requisites rule 4), and the summary counts them.
    assert f": {len(pages)} pages fetched this run" in summary, summary
    assert f"fetched {len(want)} here, forwarded 0, failed 0" in summary, summary
    # Politeness, from the server's log: every request of each host, robots.txt included.
    for host in styled.HOSTS:
        times = sorted(e.t for e in crawl.log if e.host == host)
        for w in (1.0, 5.0):
            assert worst(times, w) <= ceiling(PER_MINUTE / 60.0, w), (host, w, worst(times, w))


def _merged(crawl: Crawl) -> tuple[Path, Path]:
    out = crawl.tmp / "crawl.duckdb"
    wacz = crawl.tmp / "crawl.wacz"
    if not wacz.exists():
        r = run_main(merge_main, [str(crawl.data), "-o", str(out), "--wacz", str(wacz)])
        assert r.returncode == 0, r.stderr
        assert "wacz " in r.stdout, r.stdout
    return out.with_suffix(".cdxj"), wacz


def test_a_page_replays_in_pywb_with_its_stylesheet_and_images_from_the_archive(crawl: Crawl) -> None:
    kit = tools()
    if kit is None:
        pytest.skip("pip could not install pywb into the tools venv")
    index, _ = _merged(crawl)
    warcs = sorted((crawl.data / "warc").glob("*.warc.gz"))
    page = f"http://{styled.STYLED_HOST}:{crawl.port}/page/0"
    with Wayback(kit, crawl.tmp / "pywb", warcs, index=index) as wb:
        html = wb.get(page, mode="mp_")
        assert html.status == 200, wb.log()[-2000:]
        text = html.body.decode()
        base = f"http://127.0.0.1:{wb.port}"
        # The page's references, rewritten by pywb into the collection (not the live web).
        refs = {}
        for path, mode in (("/css/site.css", "cs_"), ("/img/photo-0.png", "im_"), ("/js/app.js", "js_")):
            m = re.search(rf'(?:{re.escape(base)})?(/crawl/\d*{mode}/http://{re.escape(styled.STYLED_HOST)}:'
                          rf'{crawl.port}{re.escape(path)})', text)
            assert m is not None, (path, text[:3000])
            refs[path] = base + m.group(1)
        cdn = re.search(rf'/crawl/\d*im_/http://{re.escape(styled.CDN_HOST)}:{crawl.port}/img/shared\.png', text)
        assert cdn is not None, text[:3000]
        for path, address in refs.items():
            got = wb.fetch(address)
            assert got.status == 200, (address, got.status)
            if path.endswith(".png"):  # pywb wraps a script and rewrites a stylesheet in these modes
                assert got.body == styled.body(path), path
        # The stylesheet as archived, and as replayed: its url()s point into the archive too.
        css = wb.fetch(refs["/css/site.css"]).body.decode()
        assert re.search(r"/crawl/\d*\w*_/http://styled\.test:\d+/img/bg\.png", css), css
        for path in ("/css/site.css", "/css/base.css", "/img/h1.png", "/fonts/site.woff2", "/img/bg.png",
                     "/js/app.js", "/favicon.ico", "/img/photo-0-2x.png"):
            got = wb.get(f"http://{styled.STYLED_HOST}:{crawl.port}{path}")  # id_: as archived
            assert (got.status, got.body) == (200, styled.body(path)), path
        got = wb.get(f"http://{styled.CDN_HOST}:{crawl.port}/img/shared.png")
        assert (got.status, got.body) == (200, styled.body("/img/shared.png"))


def test_the_wacz_of_the_merge_validates_and_replays_in_pywb(crawl: Crawl) -> None:
    kit = tools()
    if kit is None:
        pytest.skip("pip could not install py-wacz into the tools venv")
    index, wacz = _merged(crawl)
    done = subprocess.run([str(kit.bin("wacz")), "validate", "-f", str(wacz)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout + done.stderr
    with zipfile.ZipFile(wacz) as z:
        names = z.namelist()
        warcs = [n for n in names if n.startswith("archive/")]
        assert warcs and all(z.getinfo(n).compress_type == zipfile.ZIP_STORED for n in warcs)
        assert z.read("indexes/index.cdx") == index.read_bytes()
        lines = z.read("pages/pages.jsonl").decode().splitlines()
        assert json.loads(lines[0])["format"] == "json-pages-1.0"
        pages = {json.loads(line)["url"] for line in lines[1:]}
        assert pages == {f"http://{styled.STYLED_HOST}:{crawl.port}{p}" for p in styled.page_paths()}
    # pywb replays from the package: wb-manager unpacks its WARC files and takes its index (renaming
    # the files it names), and the page's stylesheet and image come back from them.
    root = crawl.tmp / "unpacked"
    root.mkdir()
    for args in (["init", "fromwacz"], ["add", "--unpack-wacz", "fromwacz", str(wacz)]):
        subprocess.run([str(kit.bin("wb-manager")), *args], cwd=root, check=True, capture_output=True, timeout=120)
    coll = root / "collections" / "fromwacz"
    with Wayback(kit, crawl.tmp / "pywb-wacz", sorted((coll / "archive").iterdir()),
                 index=coll / "indexes" / "index.cdxj") as wb:
        for path in ("/page/0", "/css/site.css", "/img/photo-0.png"):
            got = wb.get(f"http://{styled.STYLED_HOST}:{crawl.port}{path}")
            assert got.status == 200, (path, got.status)
            if path != "/page/0":
                assert got.body == styled.body(path), path


async def test_in_a_ring_a_requisite_is_fetched_by_its_hosts_owner(tmp_path: Path) -> None:
    """Two peers in this process, named so that styled.test and the CDN host have different owners:
    the CDN's image is found at the page's owner and fetched by the other, under its politeness."""
    web = HostileWeb()
    async with trio.open_nursery() as nursery:
        await nursery.start(web.serve)  # in this loop, beside the peers
        port = web.port
        page_host, cdn_host = f"{styled.STYLED_HOST}:{port}", f"{styled.CDN_HOST}:{port}"
        toml = cluster_toml(tmp_path, [web.url(styled.STYLED_HOST, "/")], peers=2, sections={
            "crawl": {"allow_hosts": [styled.STYLED_HOST]},
            "politeness": {"rate": PER_MINUTE, "initial_delay": 0.25, "window": 2.0},
            "warc": {"enabled": True, "requisites": True}})
        vnodes = load_config(toml).ring.vnodes
        # The ring hashes host:port, and the port is new each run: the names are chosen to split them.
        ids = next((a, b) for a, b in ((f"a{k}", f"b{k}") for k in range(500))
                   if HashRing({a: 1.0, b: 1.0}, vnodes).owner(page_host)
                   != HashRing({a: 1.0, b: 1.0}, vnodes).owner(cdn_host))
        owners = HashRing({ids[0]: 1.0, ids[1]: 1.0}, vnodes)
        text = toml.read_text().replace('id = "p1"', f'id = "{ids[0]}"').replace('id = "p2"', f'id = "{ids[1]}"')
        async with Ring(tmp_path, text) as ring:
            try:
                with trio.fail_after(BOUNDED):
                    for p in ids:
                        await ring.start_in_process(nursery, p)
                    await ring.wait()
            except trio.TooSlowError:
                raise AssertionError(f"the peers did not finish in time\n{ring.tails()}") from None
            codes = {p: proc.returncode for p, proc in ring.procs.items()}
            summaries = {p: ring.output(p) for p in ids}
            tails = ring.tails()
        log = list(web.log)
        nursery.cancel_scope.cancel()
    assert codes == {ids[0]: 0, ids[1]: 0}, tails
    fetched: dict[str, int] = {}
    for e in log:
        if e.target != "/robots.txt":
            url = f"http://{e.host}:{port}{e.target}"
            fetched[url] = fetched.get(url, 0) + 1
    want = styled.requisites(port)
    assert set(want) <= set(fetched) and all(fetched[u] == 1 for u in want), fetched
    # The image's capture is in its host's owner's WARC file, and the page's owner forwarded it there.
    page_owner, cdn_owner = owners.owner(page_host), owners.owner(cdn_host)
    image = f"http://{styled.CDN_HOST}:{port}/img/shared.png"
    where = {p: [line for f in (tmp_path / f"p{i + 1}" / "warc").glob("*.cdxj")
                 for line in f.read_text().splitlines() if f'"url": "{image}"' in line]
             for i, p in enumerate(ids)}
    assert len(where[cdn_owner]) == 1 and where[page_owner] == [], where
    assert f"-{cdn_owner}-" in where[cdn_owner][0]
    # Each of the three pages with the image forwards it; its owner's seen set takes it once.
    assert f"forwarded {styled.PAGES}, " in summaries[page_owner], summaries
    assert "fetched 1 here" in summaries[cdn_owner], summaries
    for host in styled.HOSTS:
        times = sorted(e.t for e in log if e.host == host)
        for w in (1.0, 5.0):
            assert worst(times, w) <= ceiling(PER_MINUTE / 60.0, w), (host, w, worst(times, w))
