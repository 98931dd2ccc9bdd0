"""The engine's one door: the crawl core and the ring node composed into one peer's core (pure).

``peer`` (``PeerCore``: events in, one ordered list of effects out, every
durability point a ``Commit`` in its rule order), ``effects`` (what it asks
of its driver besides the crawl's and the ring's effects), and its parts,
each reached through it: ``persistence`` (the core's side of the driver's
files: recovery, a snapshot's view, the seen set's batches), ``readouts``
(the figures a running peer shows) and ``ringgate`` (the ring's say on the
crawl's scheduling: the page budget, the end of the crawl, the lease).
"""
