"""The seen-URL set of this peer's partition: a Bloom filter, and an exact sieve behind it.

Bottom up: ``bloomformat`` (the filter file's structs), ``slices`` (one plain
Bloom filter, sized and probed), ``kernels`` (the vectorised numpy batch
kernels), ``bloom`` (the scalable Bloom filter on bitarray and MurmurHash3),
``sieve`` (the exact seen set's policy: "maybe seen" checked in batches
against the URL hashes on disk).
"""
