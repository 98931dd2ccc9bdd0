"""Real processes of a test or a benchmark: started in their own session, bounded, read back.

``children`` (a benchmark's processes, never outliving it, their CPU),
``peerrun`` (real ``python -m peer`` runs against the hostile web).
"""
