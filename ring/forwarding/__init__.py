"""Forwarding URLs to their owners: batches, sequence numbers, acks and resends, both halves (pure).

``forwarder`` (the sender's ``Outbox``: one protocol), ``inbox`` (the
receiver's verdict on each batch), ``routes`` (a member's routing id and
the routes it was heard on), ``intake`` (what a batch taken or given back
hands the crawl, in rule order).
"""
