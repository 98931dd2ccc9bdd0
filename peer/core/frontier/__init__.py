"""The per-host frontier: queues of URLs and a polite scheduler over hosts.

Bottom up: ``pid`` (a host's delay controller), ``ceiling`` (the 1 s/5 s
ceiling's numbers and rings of start times), ``profile`` (a politeness
profile's figures), ``hoststate`` (the records kept per host and per IP),
``pacing`` (delay, PID windows, backoff), ``ipbudget`` (hosts sharing an IP
paced as one), ``spillqueue`` (a queue's tail on disk), ``census``
(read-outs for status and metrics), ``scheduler`` (when each host may start,
which goes next) and ``frontier`` (push, pop_ready, done).
"""
