"""One run of a peer: its data directory, resume or fresh, and its figures as people read them.

``layout`` (the files of a data_dir), ``runs`` (resume, start fresh, ask
or refuse), ``stats`` (the summary and stats.json), ``progress`` (the
progress line), ``scrape`` (what a metrics scrape exports), ``probes``
(what the metrics server answers: liveness, readiness, the token).
"""
