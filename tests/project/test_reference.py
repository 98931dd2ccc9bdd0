"""The reference pages cannot drift from the code they describe.

docs/configuration.md holds the table scripts/generated_docs.py generates from
peer.core.config.cluster's one-field-per-key declarations, the shipped
cluster.toml is the demo's ring with a commented line for every key, and
docs/figures.md names each family of figures as ring.vocabulary does.
"""

import importlib.util
import re
import sys
from pathlib import Path

from peer.core.config.cluster import reference
from peer.core.config.livekeys import is_live
from peer.state.configfile import load_config
from ring.vocabulary import TERMS, Family

ROOT = Path(__file__).resolve().parents[2]


def all_keys() -> list[str]:
    return [key for key, *_ in reference()]


def test_shipped_cluster_toml_is_a_3_peer_ring_on_loopback():
    cfg = load_config(ROOT / "cluster.toml")
    assert [p.id for p in cfg.peers] == ["p1", "p2", "p3"]
    assert all(p.address.startswith("tcp://127.0.0.1:") for p in cfg.peers)
    assert cfg.ring.name == "demo"
    assert cfg.crawl.seeds == ("http://s001.web.test:8080/",)
    assert cfg.dns.resolve == {"*.web.test": "127.0.0.1"}
    assert cfg.data_dir("p2") == ROOT / "data" / "p2"


def _generated_docs():
    """scripts/generated_docs.py as a module: the tables it prints and their markers."""
    spec = importlib.util.spec_from_file_location("generated_docs", ROOT / "scripts" / "generated_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


def test_docs_config_reference_lists_every_key_with_its_default():
    page = (ROOT / "docs" / "configuration.md").read_text()
    for key, kind, default, doc in reference():
        live = "yes" if is_live(key) else ""  # ring set changes it in a running ring
        row = f"| `{key}` | {kind} | `{default}` | {live} | {doc} |"
        assert row in page, f"docs/configuration.md config reference is missing or stale for {key}: {row}"


def test_docs_config_reference_is_the_generated_table_verbatim():
    script = _generated_docs()
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert script.config_table() in page
    assert script.CONFIG.current(page) == script.config_table(), (
        "docs/configuration.md's config reference is not current: run python scripts/config_reference.py --write"
    )


def test_config_reference_write_replaces_a_stale_table(tmp_path):
    script = _generated_docs()
    block, table = script.CONFIG, script.config_table()
    page = tmp_path / "configuration.md"
    page.write_text(f"# Configuration\n\n{block.start}\n| `ring.gone` | x | `0` | stale |\n{block.end}\n\n## After\n")
    assert block.current(page.read_text()) != table
    assert block.write(table, page) is True
    text = page.read_text()
    assert block.current(text) == table
    assert "ring.gone" not in text and text.endswith(f"{block.end}\n\n## After\n")
    assert block.write(table, page) is False


def test_cluster_toml_mentions_every_key_with_a_comment():
    text = (ROOT / "cluster.toml").read_text()
    for key in all_keys():
        name = key.split(".", 1)[1]
        assert re.search(rf"^{re.escape(name)} = .*#", text, re.M) or re.search(
            rf"^#.*\n{re.escape(name)} = ", text, re.M
        ), f"cluster.toml has no commented line for {key}"


# -- docs/figures.md (ring.vocabulary) -----------------------------------------------------


def test_the_docs_table_names_each_family_as_the_vocabulary_does():
    rows = {line.split("|")[1].strip(): line for line in (ROOT / "docs" / "figures.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| family")}
    for family, term in TERMS.items():
        if family is Family.COUNTERS:
            continue
        row = rows[term.words if family is not Family.PAGES else "pages"]
        assert f"`{term.words}`" in row and f"`{family.value}`" in row, row
        assert f"`ringcrawl_{term.metric}_total" + (f"{{{term.label}}}`" if term.label else "`") in row, row
