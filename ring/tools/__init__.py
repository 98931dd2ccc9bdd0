"""The operator's tools of a ring, apart from the protocol.

- ``client``     the status and leave client, typed results
- ``cli``        ``python -m ring table``, ``status``, ``leave``, ``dashboard``
- ``dashboard``  the live page of ``ring dashboard`` (its page script in ``static/``)
- ``shell``      the one-line error shell of every command of both packages
"""
