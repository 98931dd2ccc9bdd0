"""A crawl report: PNG plots and one self-contained ``index.html`` from a results file.

Reads a results file (a peer's ``pages.duckdb`` or the merged file of a
cluster; both have the tables of :data:`peer.results.store.SCHEMA`), read-only, so a
report can be drawn while nothing else holds the file for writing. Writes into
the output directory:

- ``rate.png``: pages per second over time, per peer (the bin widens with the
  span so a long crawl stays readable);
- ``polite.png``: politeness as the site owner sees it: each of the busiest
  hosts' requests per 1 s bin (counted at request start, ``fetched_at -
  elapsed_ms``) against the setpoint per second and the hard ceiling
  ``ceil(1.1 x S) + 1`` of any 1 s, with the PID's delay on a second axis.
  Each host's setpoint is its own: from ``--ring cluster.toml``'s
  ``politeness.rate`` or its ``[[site]]`` block's ``rate``, else from pid_trace
  (the host's setpoint over the window its rows are spaced by);
- ``pid.png``: the PID trace of the busiest hosts: pages per window against the
  setpoint, and the delay the controller chose (T_k of peer/core/politeness/pid.py's law);
- ``status.png``: status codes, a failed fetch (NULL status) counted as "error";
- ``latency.png``: elapsed_ms of the pages that got an answer, log x when the
  range spans more than two decades;
- ``ring_share.png``: each peer's share of the hash ring against its share of
  hosts and of pages. Ring shares come from ``--ring cluster.toml`` (weights,
  vnodes), else from the peers found in the data with weight 1 and the default
  vnodes. Hosts differ in size, so pages can stray from the ring share while
  hosts should track it (UbiCrawler §3: balance is over hosts);
- ``errors.png``: failed fetches by error kind;
- ``progress.png``: progress over time: fetched pages and the links they
  held (discovered links, counted per page: the frontier is not recorded in
  the rows), cumulative;
- ``depth.png``: fetched pages by depth (links from a seed);
- ``index.html``: a summary, tables of peers, top hosts, failed requests and,
  apart, the URLs recorded without a request (robots exclusions, a
  robots.txt that could not be read, a host given up), item quality (% empty
  per field and sample rows of each ``items_*`` table), the config the run
  used (from the ``stats.json`` beside the file: a peer's data_dir, or
  ``crawl.stats.json`` beside a merged ``crawl.duckdb``; or ``--stats``) and
  the slowest pages, then the figures with captions.

"pages" are fetched pages, requests made (peer/core/run/progress.py): a row without a
request has no status and no measured time (``status IS NULL AND elapsed_ms
= 0``) and is counted apart.

A plot whose data is absent (no pid_trace table, no failed fetch...) is not
drawn; the page says why instead. Every string from the data (URLs, titles,
hosts, peer ids, error kinds) is hostile input: it is HTML-escaped, shown as
text and never as a link, and sanitised before it reaches matplotlib (whose
mathtext would parse ``$...$``). Figures are drawn with ``matplotlib.figure.
Figure`` on the Agg backend, not pyplot: no global figure registry to leak, no
display needed.

Aggregation happens in DuckDB; only the latencies come back row by row, so a
100k-page file takes a few seconds, most of it matplotlib.

Usage::

    python scripts/report.py data/merged.duckdb -o report/ [--ring cluster.toml] [--top 4]

(``ringcrawl-report`` is the same command, installed by pip; its command line is
``peer.commands.report``.)

The package, bottom up (each module imports only those above it)::

    facts.py  the file read once into Facts: the numbers, queried in DuckDB
    plots.py  the figures, each (figure, caption) or the reason it is skipped
    page.py   index.html: the summary tables and the figures with captions
    build.py  build_report and captions
"""

from peer.results.report.build import ReportSummary, build_report, captions
from peer.results.report.plots import PoliteSeries, politeness_series

__all__ = ["PoliteSeries", "ReportSummary", "build_report", "captions", "politeness_series"]
