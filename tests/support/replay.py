"""pywb, the replay an archivist uses, run against a crawl's WARC files.

A test judges an archive by replaying it in a tool nobody here wrote: pywb
(Webrecorder's wayback machine, the replay behind Browsertrix and many
national libraries' archives). pywb pins its own warcio and brings gevent,
so it is not put in the crawler's .venv: :func:`tools` installs it once into
a venv of its own under the user's cache directory (``RINGCRAWL_TOOLS_VENV``
overrides the place), together with ``wacz`` (py-wacz, the WACZ packager's
validator). A machine where pip cannot reach its registry gets ``None`` and
the caller skips with the reason.

:class:`Wayback` serves a collection of WARC files on a loopback port, indexed
by pywb itself (``wb-manager add``) or by a CDXJ index given to it (ours), and
fetches captures the way a browser would ask pywb for them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Replayed", "Tools", "Wayback", "tools"]

# What the tools venv holds: versions pinned so a cached venv is reused only
# when it holds these (the stamp file says what was installed).
PACKAGES = ("pywb==2.10.0", "wacz==0.6.0")


@dataclass(frozen=True)
class Tools:
    """The archive tools' venv."""

    venv: Path

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


def _tools_dir() -> Path:
    if os.environ.get("RINGCRAWL_TOOLS_VENV"):
        return Path(os.environ["RINGCRAWL_TOOLS_VENV"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "ringcrawl" / "archive-tools"


def tools() -> Tools | None:
    """The venv with pywb and py-wacz, installed on first use; None if pip cannot.

    Several test workers may ask at once: a lock file makes one install and
    the others wait for it (about 15 s on the 2-core machine).
    """
    venv = _tools_dir()
    stamp = venv / ".installed"
    want = " ".join(PACKAGES)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / (venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == want and (venv / "bin" / "wayback").exists():
            return Tools(venv)
        shutil.rmtree(venv, ignore_errors=True)
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PACKAGES],
                check=True, capture_output=True, timeout=600,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            shutil.rmtree(venv, ignore_errors=True)
            return None
        stamp.write_text(want)
        return Tools(venv)


@dataclass(frozen=True)
class Replayed:
    """One answer of the replay: what a browser asking pywb gets."""

    status: int
    headers: dict[str, str]
    body: bytes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Wayback:
    """pywb serving one collection of WARC files on 127.0.0.1.

    ``index``: ``None`` lets pywb index the files itself (``wb-manager add``,
    as an archivist would); a path to a CDXJ file (sorted, ours) is used as
    the collection's index instead, so the replay goes through our index.
    Use as a context manager; the server process is stopped by its PID.
    """

    def __init__(self, tools: Tools, root: Path, warcs: Sequence[Path], *, index: Path | None = None,
                 collection: str = "crawl") -> None:
        self.tools = tools
        self.root = root
        self.collection = collection
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        coll = root / "collections" / collection
        (coll / "archive").mkdir(parents=True, exist_ok=True)
        (coll / "indexes").mkdir(parents=True, exist_ok=True)
        if index is None:
            subprocess.run([str(tools.bin("wb-manager")), "add", collection, *map(str, warcs)],
                           cwd=root, check=True, capture_output=True, timeout=300)
        else:
            for w in warcs:
                target = coll / "archive" / w.name
                if not target.exists():
                    os.symlink(w.resolve(), target)
            shutil.copyfile(index, coll / "indexes" / "index.cdxj")
        # No proxy mode, no recording: replay only.
        (root / "config.yaml").write_text("collections_root: collections\nframed_replay: false\n")

    def __enter__(self) -> Wayback:
        log = open(self.root / "wayback.log", "wb")
        self._proc = subprocess.Popen(
            [str(self.tools.bin("wayback")), "--bind", "127.0.0.1", "-p", str(self.port)],
            cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"wayback exited {self._proc.returncode}: {self.log()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return self
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("wayback did not listen within 60 s")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)

    def log(self) -> str:
        return (self.root / "wayback.log").read_text(errors="replace")

    def address(self, url: str, timestamp: str = "", mode: str = "id_") -> str:
        """pywb's address of ``url`` at ``timestamp`` (14 digits, or a prefix).

        ``mode`` ``id_`` asks for the capture as archived (no rewriting);
        ``mp_`` for the page rewritten to load its requisites from the archive,
        as a browser's main frame gets it; ``""`` for the framed default.
        """
        return f"http://127.0.0.1:{self.port}/{self.collection}/{timestamp}{mode}/{url}"

    def get(self, url: str, timestamp: str = "", mode: str = "id_") -> Replayed:
        """The replay of ``url`` nearest ``timestamp``, as a browser would fetch it (no redirects followed)."""
        return self.fetch(self.address(url, timestamp, mode))

    def fetch(self, address: str) -> Replayed:
        """One GET of a replay address (as :meth:`address` makes, or a rewritten link)."""

        class _NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a: object, **k: object) -> None:
                return None

        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(address, timeout=30) as r:
                return Replayed(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
        except urllib.error.HTTPError as e:
            return Replayed(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())

    def timemap(self, url: str) -> list[str]:
        """The 14-digit timestamps pywb lists for ``url`` (its CDX API), oldest first."""
        r = self.fetch(f"http://127.0.0.1:{self.port}/{self.collection}/cdx?url={url}&output=json")
        return [json.loads(line)["timestamp"] for line in r.body.decode().splitlines() if line.strip()]

