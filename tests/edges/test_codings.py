"""The content codings of an interpreter where a decoding library is missing (peer.core.http.inflate).

brotli and zstd are imported when peer.core.http.inflate is; without them,
their codings are neither asked for (Accept-Encoding) nor decoded. Import
time needs a fresh interpreter, so this runs one; the codings themselves are
tested in process in tests/core/test_inflate.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_missing_library_leaves_its_coding_out_instead_of_failing():
    # A fresh interpreter where brotli and every zstd module fail to import.
    code = ("import sys\n"
            "for name in ('brotli', 'compression.zstd', 'backports.zstd'): sys.modules[name] = None\n"
            "from peer.core.http import http1, inflate, head\n"
            "print(inflate.AVAILABLE, repr(http1.ACCEPT_ENCODING), sorted(head.CODINGS))\n"
            "try:\n    inflate.decoder(('br',))\nexcept Exception as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2], check=True).stdout.splitlines()
    assert out == ["('gzip', 'deflate') 'gzip, deflate' ['deflate', 'gzip', 'x-gzip']",
                   "decode: unsupported Content-Encoding 'br'"]
