"""The operator's tools of a ring, apart from the protocol.

- ``client``     the status and leave client, typed results
- ``cli``        ``python -m ring`` (``ringcrawl-ring``): ``table``, ``status``, ``leave``, ``dashboard``
- ``statuspoll`` where ``status`` and the dashboard ask: the seeds, or a solo peer's recorded address
- ``dashpage``   the dashboard's page without I/O: the polls kept, rates, escaped HTML
- ``dashauth``   who may read the dashboard: its token, the login form, the session cookie (pure)
- ``dashboard``  the live page of ``ring dashboard``: its poller and h11 server (its page script in ``static/``)
- ``keys``       the peers' CurveZMQ key pairs (``ringcrawl-keys``, ``scripts/keys.py``)
- ``shell``      the one-line error shell of every command of both packages

``ring/__main__.py`` hands ``cli`` and ``keys`` cluster.toml's parser, the one
place ``ring`` meets ``peer``.
"""
