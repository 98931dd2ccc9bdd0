"""The Bloom filter file's constants: its magic, header, slice and trailer structs.

The layout is drawn in peer/state/bloomfile.py, which reads and writes the
file; the filter (peer/core/seen/bloom.py) and its slices
(peer/core/seen/slices.py) pack their own headers with the same structs, so
that the file's buffers are the filter's own (no copy of the bits).
"""

from __future__ import annotations

import struct

__all__ = ["FRESH", "HEADER", "MAGIC", "MAGIC_FAMILY", "MAGIC_V1", "MAX_SLICES", "SLICE", "TRAILER",
           "V1_HEADER"]

MAGIC_V1 = b"RCBLOOM1"
MAGIC = b"RCBLOOM2"
#: The magic without its version byte: a file of another version still says it is ours.
MAGIC_FAMILY = MAGIC[:-1]
V1_HEADER = struct.Struct("<8sQIQdQ")
HEADER = struct.Struct("<8sIQI")  # magic, growth, max_capacity, slices
SLICE = struct.Struct("<QIQdQ")   # m, k, capacity, error_rate, count
TRAILER = struct.Struct("<I")
# Capacities are u64 and each slice but the last (cut to max_capacity) is at
# least twice the one before, so a real file has at most 65 slices; a bigger
# count is a corrupt header.
MAX_SLICES = 80
#: The way out an unreadable file's error names.
FRESH = "restore it from a backup or start over with --fresh"
