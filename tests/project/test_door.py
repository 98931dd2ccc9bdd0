"""The engine has one door to the core: no module under ``peer/engine/`` reaches past ``PeerCore``.

``peer.core.door.peer.PeerCore`` is the only core object the driver holds
(peer/core/door/peer.py's docstring): every job call, the recovery, the seen
set's batches, the moved queues and the figures go through it, and its
effects come back in one list. So the engine's source, read with ``ast``
module by module (by glob, like tests/project/test_purity.py), names none
of the inner parts (the frontier, the sieve, the Outbox, the Inbox, the
membership), imports neither inner core, and reads neither handle off the
peer core.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = sorted((ROOT / "peer" / "engine").rglob("*.py"))

#: The inner parts of the crawl core and the ring node the engine must not name.
INNER_PARTS = frozenset({"frontier", "sieve", "outbox", "inbox", "membership"})
#: The inner cores: the engine imports neither class.
INNER_CORES = frozenset({"CrawlCore", "RingNode"})
#: PeerCore's own handles on them, which the engine must not read.
HANDLES = frozenset({"crawl", "node"})
#: Receivers whose attribute of those names is no inner part: the config (its
#: ``[frontier]`` section) and a set of figures (its ``frontier`` count).
NOT_PARTS = frozenset({"cfg", "_cfg", "f", "figures"})


def _name(node: ast.expr) -> str | None:
    """The last name of ``x`` or ``a.b.x``."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_peer(node: ast.expr) -> bool:
    """``peer`` or ``<anything>.peer``: the engine's name for its PeerCore."""
    return (isinstance(node, ast.Name) and node.id == "peer") or (
        isinstance(node, ast.Attribute) and node.attr == "peer")


def reach_ins(source: str, name: str = "<source>") -> list[str]:
    """Where ``source`` reaches past the door: ``file:line what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            if node.attr in INNER_PARTS and _name(node.value) not in NOT_PARTS:
                found.append(f"{name}:{node.lineno} .{node.attr}")
            elif node.attr in HANDLES and _is_peer(node.value):
                found.append(f"{name}:{node.lineno} peer.{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in INNER_CORES:
                    found.append(f"{name}:{node.lineno} imports {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("ring.node", "peer.core.crawl.core"):
                    found.append(f"{name}:{node.lineno} imports {alias.name}")
    return found


def test_the_checker_finds_what_the_engine_did_before_it_had_one_door():
    # The shapes of the old engine (peer/engine/ringface.py, durability.py,
    # crawler.py before the door): each is found.
    old = """
from peer.core.crawl.core import CrawlCore
from ring.node import RingNode
import ring.node
def f(self):
    self.core.frontier.flush_tails()
    self.core.sieve.take_kick()
    self.node.outbox.stats()
    node.membership.members()
    self.node.inbox.received
    self.peer.crawl.admit(job, now)
    peer.node.leave(now)
"""
    assert len(reach_ins(old)) == 10, reach_ins(old)
    # What the engine may do: its own config's sections, the core's door.
    allowed = ("cfg.crawl.max_pages\nself._cfg.frontier.checkpoint_mb\nf.frontier\n"
               "self.peer.admit(job, now)\nfrom peer.core.door.peer import PeerCore\n")
    assert reach_ins(allowed) == []


def test_no_engine_module_reaches_into_the_core_past_peercore():
    assert ENGINE, "no engine modules found"
    found = [hit for path in ENGINE
             for hit in reach_ins(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, "the engine reaches past PeerCore:\n" + "\n".join(found)


def test_the_engine_holds_one_core_handle():
    # Crawler builds one PeerCore, and no part holds another core object.
    from peer.core.crawl.core import CrawlCore
    from peer.core.door.peer import PeerCore
    from peer.core.config.cluster import parse_config
    from peer.engine.crawler import Crawler
    from ring.node import RingNode

    cfg = parse_config('[[peer]]\nid = "p1"\n[crawl]\nseeds = ["http://a.test/"]\n',
                       Path("/nonexistent/cluster.toml"))
    crawler = Crawler(cfg, "p1", data_dir=Path("/nonexistent/p1"))
    held = [(name, value) for owner in (crawler, *vars(crawler).values())
            if hasattr(owner, "__dict__") and type(owner).__module__.startswith("peer.engine")
            for name, value in vars(owner).items()]
    assert [n for n, v in held if isinstance(v, (CrawlCore, RingNode))] == []
    cores = {id(v) for _, v in held if isinstance(v, PeerCore)}
    assert cores == {id(crawler.peer)}
