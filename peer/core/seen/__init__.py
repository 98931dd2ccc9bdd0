"""The seen-URL set of this peer's partition: a Bloom filter, and an exact sieve behind it.

``bloom`` (a scalable Bloom filter on bitarray and MurmurHash3),
``kernels`` (its vectorised numpy batch kernels), ``sieve`` (the exact seen
set's policy: "maybe seen" checked in batches against the URL hashes on disk).
"""
