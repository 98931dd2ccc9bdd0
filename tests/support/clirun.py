"""Run a command's ``main(argv)`` in the test's process, as a user would see it run.

A subprocess costs about a second of CPU in imports alone; the command-line
tests judge what a command prints and its exit status, which the same
``main`` gives in this process. :func:`run_main` returns what a
``subprocess.run(..., capture_output=True)`` would: the exit status
(``SystemExit`` from argparse included), stdout and stderr as text.

- The root logger is emptied for the call and restored after: pytest's log
  capture has handlers on it, which make ``logging.basicConfig`` (how
  ``python -m peer`` sends its log to stderr) a no-op, so a log line the
  user sees on stderr would be missing here.
- ``stdin`` is a terminal or not (``tty``) and holds ``answers`` for
  ``input()``; without a real console, ``input()`` writes its prompt to
  ``sys.stdout`` and reads ``sys.stdin``, so the question is in ``stdout``
  as it is on a terminal.
- ``stdout_tty`` makes ``sys.stdout.isatty()`` true (``ring status --watch``
  redraws in place on a terminal).

:class:`WebThread` serves the local web from a thread of this process (its
own ``trio.run``), so a crawl run in process or by a real peer has a server
without a webfarm process to start.
"""

from __future__ import annotations

import contextlib
import io
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Result", "WebThread", "error_line", "ring_main", "ring_source", "run_main", "solo_toml", "web_thread"]


@dataclass(frozen=True, slots=True)
class Result:
    """What the user saw: ``subprocess.CompletedProcess``'s fields of a text run."""

    returncode: int
    stdout: str
    stderr: str


class _Stream(io.StringIO):
    def __init__(self, text: str = "", tty: bool = False) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


#: Loggers whose level ``python -m peer`` sets; restored after each call.
_TOUCHED = ("httpx", "httpcore")


def run_main(main: Callable[..., int], argv: Sequence[str], *, tty: bool = False, answers: str = "",
             stdout_tty: bool = False, **kwargs: Any) -> Result:
    """``main(list(argv), **kwargs)`` with its own stdin, stdout, stderr and root logger."""
    out, err, inp = _Stream(tty=stdout_tty), _Stream(), _Stream(answers, tty=tty)
    root = logging.getLogger()
    saved = root.handlers[:], root.level, {n: logging.getLogger(n).level for n in _TOUCHED}
    root.handlers = []
    old_stdin = sys.stdin
    sys.stdin = inp
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv), **kwargs)
            except SystemExit as exc:  # argparse: --help, a bad option
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
    finally:
        sys.stdin = old_stdin
        for h in root.handlers:
            h.close()
        root.handlers = saved[0]
        root.setLevel(saved[1])
        for name, level in saved[2].items():
            logging.getLogger(name).setLevel(level)
    return Result(int(code), out.getvalue(), err.getvalue())


def ring_source() -> Any:
    """The ``ring.tools.cli.ConfigSource`` that ``ring/__main__.py`` builds (peer's parser and errors)."""
    from ring.__main__ import SOURCE

    return SOURCE


def ring_main(argv: Sequence[str], **kwargs: Any) -> Result:
    """``python -m ring ARGV``, in this process."""
    from ring.tools.cli import main

    return run_main(main, argv, source=ring_source(), **kwargs)


def error_line(res: Result, prefix: str = "error: ") -> str:
    """The one error line of a command that could not start (log lines may precede it)."""
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "Exception Group" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines and lines[-1].startswith(prefix), res.stderr
    assert sum(line.startswith(prefix) for line in lines) == 1, res.stderr
    return lines[-1]


@dataclass
class WebThread:
    """The local web served by a thread: its port and its in-memory request log."""

    farm: Any  # localweb.sitegraph.server.WebFarm

    @property
    def port(self) -> int:
        return int(self.farm.port)

    def requests(self) -> list[Any]:
        """A copy of the log so far, every request the server has begun included.

        The server thread logs a request after its answer is sent, so the
        client may have the answer before the log has the line: wait (at
        most 5 s) until as many lines are logged as requests were begun.
        """
        deadline = time.monotonic() + 5.0
        while (len(self.farm.log) < sum(self.farm.stats.per_host.values())
               and time.monotonic() < deadline):
            time.sleep(0.005)
        return list(self.farm.log)


@contextlib.contextmanager
def web_thread(hosts: int = 1, *, pages: int = 6, links: int = 3, shop_products: int = 3,
               shop: bool = True, timeout: float = 30.0) -> Iterator[WebThread]:
    """``scripts/webfarm.py --hosts N --pages 6 --links 3 --shop-products 3`` in a thread."""
    import trio

    from localweb import SiteGraph, serve_webfarm

    graph = SiteGraph(hosts=hosts, pages_per_host=pages, links_per_page=links, shop=shop,
                      shop_products=shop_products)
    started: queue.Queue[Any] = queue.Queue()

    async def serve() -> None:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            farm = await nursery.start(serve_webfarm, graph)
            started.put((farm, trio.lowlevel.current_trio_token(), stop))
            await stop.wait()
            nursery.cancel_scope.cancel()

    def run() -> None:
        try:
            trio.run(serve)
        except BaseException as exc:  # handed to the test, which raises it
            started.put(exc)

    thread = threading.Thread(target=run, name="local web", daemon=True)
    thread.start()
    got = started.get(timeout=timeout)
    if isinstance(got, BaseException):
        thread.join(timeout)
        raise got
    farm, token, stop = got
    try:
        yield WebThread(farm)
    finally:
        token.run_sync_soon(stop.set)
        thread.join(timeout)
        assert not thread.is_alive(), "the local web's thread did not stop"


def solo_toml(tmp_path: Path, port: int, *, allow: str = '["*.web.test"]', seeds: str | None = None,
              extra: str = "", rate: float = 0.0) -> Path:
    """A one-peer config without an address (a solo peer needs none)."""
    toml = tmp_path / "solo.toml"
    seeds = seeds if seeds is not None else f'["http://s001.web.test:{port}/"]'
    toml.write_text(f"""
[ring]
name = "solo"

[[peer]]
id = "solo"
data_dir = "{tmp_path / 'solo'}"

[crawl]
seeds = {seeds}
allow_hosts = {allow}
allow_private = true
timeout = 5.0
{extra}

[politeness]
rate = {rate}

[dns]
resolve = {{ "*.web.test" = "127.0.0.1" }}

[bloom]
capacity = 10000
""")
    return toml
