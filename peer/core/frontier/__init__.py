"""The per-host frontier: queues of URLs, and a polite scheduler over hosts as its part.

Bottom up: ``hoststate`` (the records kept per host and per IP), ``pacing``
(a host's delay, PID windows, backoff, its starts), ``ipbudget`` (hosts
sharing an IP paced as one), ``census`` (read-outs for status and metrics),
``scheduler`` (``HostScheduler``: the records, when each host may start,
which goes next, forgetting), ``order`` (a URL's band and the slot that
carries it), ``bands`` (a host's URLs in RAM, band by band), ``spillqueue``
(a queue's tail on disk) and ``frontier`` (``Frontier``: the queues, push,
pop_ready, done, holding the scheduler). The numbers they apply are the ``politeness`` room's.
"""
