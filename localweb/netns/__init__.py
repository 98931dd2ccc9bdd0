"""Peers and a web in Linux network namespaces, with links that can be cut (root only).

``ring`` (``NetRing``: namespaces on a bridge, silent cuts at the
receiver), ``partition`` (real peers crawled through a schedule of cuts,
kills and restarts, judged by ``localweb.judges.owners``).
"""
