"""The ring's membership: who is in the cluster, in what state, and what its members agree on (pure).

SWIM with anti-entropy repairs, one part a module (hashicorp/memberlist's
split): ``records`` (how two records of a member merge), ``view`` (the
records one peer holds), ``swim`` (probes and suspicion),
``dissemination`` (the piggyback queue), ``antientropy`` (joins and whole-view
repairs), ``termination`` (is the crawl over), ``lease`` (a majority vouching
for our ring, or no request starts), ``budget`` (``max_pages`` split into
caps that move by grants), and ``protocol`` (``Membership``: the parts
composed). ``sim`` is a simulated network for them.
"""
