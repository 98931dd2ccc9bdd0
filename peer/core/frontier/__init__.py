"""The per-host frontier: queues of URLs and a polite scheduler over hosts.

Bottom up: ``pid`` (a host's delay controller), ``hoststate`` (the record kept
per host), ``pacing`` (delay, PID windows, backoff, the 1 s/5 s ceiling),
``ipbudget`` (hosts sharing an IP paced as one), ``spillqueue`` (a queue's
tail on disk), ``census`` (read-outs for status and metrics), ``scheduler``
(when each host may start, which goes next) and ``frontier`` (push,
pop_ready, done).
"""
