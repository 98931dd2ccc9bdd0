"""ring.vocabulary: the one table of the figures' names, and the docs that show it."""

from __future__ import annotations

from pathlib import Path

from ring.vocabulary import TERMS, Family, failed, not_requested, split_pairs

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_names_each_family_as_the_vocabulary_does():
    rows = {line.split("|")[1].strip(): line for line in (ROOT / "docs" / "figures.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| family")}
    for family, term in TERMS.items():
        if family is Family.COUNTERS:
            continue
        row = rows[term.words if family is not Family.PAGES else "pages"]
        assert f"`{term.words}`" in row and f"`{family.value}`" in row, row
        assert f"`ringcrawl_{term.metric}_total" + (f"{{{term.label}}}`" if term.label else "`") in row, row


def test_exclusions_are_never_failures_nor_drops():
    assert failed({"robots": 3, "dns": 2, "timeout": 1}, {"robots": 3, "dns": 1}) == {"dns": 1, "timeout": 1}
    assert not_requested({"robots": 3}, 4, {"max_url_length": 2, "max_links_per_page": 9}) == {
        "max_url_length": 2, "robots": 3, "scope": 4}
    split = split_pairs([("not_requested.robots", 3), ("cap.max_links_per_page", 9), ("fwd.frames", 2),
                         ("malformed.content_length", 1), ("not_msgpack", 1)])
    assert split.not_requested == (("robots", 3),)
    assert split.counters == (("cap.max_links_per_page", 9), ("fwd.frames", 2))
    assert split.drops == (("malformed.content_length", 1), ("not_msgpack", 1))
