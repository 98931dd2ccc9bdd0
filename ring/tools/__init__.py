"""The operator's tools of a ring, apart from the protocol.

- ``client``     the status and leave client, typed results
- ``cli``        ``python -m ring`` (``ringcrawl-ring``): ``table``, ``status``, ``leave``, ``dashboard``
- ``dashboard``  the live page of ``ring dashboard`` (its page script in ``static/``)
- ``keys``       the peers' CurveZMQ key pairs (``ringcrawl-keys``, ``scripts/keys.py``)
- ``shell``      the one-line error shell of every command of both packages

``ring/__main__.py`` hands ``cli`` and ``keys`` cluster.toml's parser, the one
place ``ring`` meets ``peer``.
"""
