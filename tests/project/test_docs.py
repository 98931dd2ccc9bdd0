"""The documentation holds together: its links reach files and headings that
exist, README.md stays a front door, and the docs site builds.

Links are checked as GitHub renders the files (a path relative to the file,
an anchor by GitHub's heading slugs); `mkdocs build --strict` checks the same
pages as the site renders them, where docs/index.md and docs/changelog.md
include README.md and CHANGELOG.md.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from test_reference import _generated_docs  # scripts/generated_docs.py as a module

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_INCLUDE = re.compile(r"\{%\s*include-markdown\s+\"([^\"]+)\"")


def doc_files(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").rglob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks and comments."""
    out, fenced = [], False
    for line in _COMMENT.sub("", text).splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings, with those of the files it includes."""
    text = path.read_text()
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(text):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    for inc in _INCLUDE.findall(text):
        found |= anchors((path.parent / inc).resolve())
    return found


def links(path: Path) -> list[str]:
    """The link targets of a markdown file, leaving out those in code."""
    return [m.group(1) for line in prose_lines(path.read_text()) for m in _LINK.finditer(_INLINE_CODE.sub("", line))]


def broken_links(files: list[Path]) -> list[str]:
    """Each relative link in ``files`` whose file, or heading, does not exist."""
    problems = []
    for path in files:
        for target in links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                problems.append(f"{path.name}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{path.name}: {target}: no heading #{anchor} in {dest.name}")
    return problems


def test_every_relative_link_reaches_an_existing_file_and_heading():
    files = doc_files()
    assert len(files) > 10
    assert sum(len(links(f)) for f in files) > 50  # the pattern finds the links at all
    assert broken_links(files) == []


def test_the_link_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# Title\n\n## Two words: `code`\n\n```\n## not a heading\n```\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](docs/b.md) [ok too](docs/b.md#two-words-code) [self](#local) [web](https://example.org/x)\n"
        "`[in code](nowhere.md)`\n\n## Local\n\n"
        "[gone](docs/c.md) [no heading](docs/b.md#three) [fenced](docs/b.md#not-a-heading)\n"
    )
    assert broken_links([page]) == [
        "a.md: docs/c.md: no such file",
        "a.md: docs/b.md#three: no heading #three in b.md",
        "a.md: docs/b.md#not-a-heading: no heading #not-a-heading in b.md",
    ]


def test_slugs_follow_github():
    assert slug("Extraction rules: `[extract]`") == "extraction-rules-extract"
    assert slug("Forwarding at 8 to 512 peers, simulated") == "forwarding-at-8-to-512-peers-simulated"
    assert slug("kill -9 with millions of queued URLs") == "kill--9-with-millions-of-queued-urls"


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def test_the_docs_site_builds_strictly(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    home = (tmp_path / "site" / "index.html").read_text()
    assert "Where to go next" in home  # README.md is the home page
    assert "Unreleased" in (tmp_path / "site" / "changelog" / "index.html").read_text()


def test_the_module_map_is_current():
    script = _generated_docs()
    page = (ROOT / "docs" / "architecture.md").read_text()
    table = script.module_table()
    # It must be able to fail: a new module makes a new row.
    assert "| `peer/core/crawl/core.py` | pure |" in table and "| `ring/io/zmqio.py` | zmq edge |" in table
    assert script.MODULES.current(page) == table, (
        "docs/architecture.md's module map is not current: run python scripts/generated_docs.py --write"
    )


_README_SECTION = re.compile(r'README\'s\s+"([^"]+)"')
_DOCS_SECTION = re.compile(r'(docs/[\w/.-]+\.md)(?:,?\s+"([^"]+)")?')


def broken_pointers(path: Path, root: Path = ROOT) -> list[str]:
    """The README sections and docs pages (with a quoted heading) a commented file names that do not exist."""
    text = re.sub(r"\n\s*#\s*", " ", path.read_text())  # a comment's words across its lines
    problems = []
    for heading in _README_SECTION.findall(text):
        if slug(heading) not in anchors(root / "README.md"):
            problems.append(f'{path.name}: the README has no section "{heading}"')
    for page, heading in _DOCS_SECTION.findall(text):
        if not (root / page).exists():
            problems.append(f"{path.name}: {page}: no such file")
        elif heading and slug(heading) not in anchors(root / page):
            problems.append(f'{path.name}: {page} has no section "{heading}"')
    return problems


def test_the_example_configs_point_at_sections_that_exist():
    # solo.toml sent its reader to the README's "Config reference", gone
    # from the README to docs/configuration.md.
    problems = [p for name in ("solo.toml", "cluster.toml") for p in broken_pointers(ROOT / name)]
    assert problems == []


def test_the_pointer_checker_finds_a_missing_section(tmp_path):
    page = tmp_path / "x.toml"
    page.write_text('# the README\'s "Your first crawl"; the README\'s "Config\n# reference"; '
                    'docs/nothing.md; docs/configuration.md "Keys"; docs/configuration.md, "Nope"\n')
    assert broken_pointers(page) == [
        'x.toml: the README has no section "Config reference"',
        "x.toml: docs/nothing.md: no such file",
        'x.toml: docs/configuration.md has no section "Nope"',
    ]


def shell_lines(path: Path) -> list[str]:
    """The command lines of a markdown file's ```sh blocks."""
    out, inside = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() in ("```sh", "```bash", "```console")
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip().removeprefix("$ "))
    return out


def test_the_docs_run_no_command_the_install_lacks():
    # The duckdb Python module is a dependency; its command-line tool is
    # not, and a reader who pasted `duckdb file "SELECT ..."` got "command
    # not found". `python -c "import duckdb; ..."` or our own commands do it.
    missing = [f"{path.relative_to(ROOT)}: {line}" for path in doc_files()
               for line in shell_lines(path) if line.split()[0] in ("duckdb", "sqlite3", "jq")]
    assert missing == []


def test_every_stats_directive_key_is_in_the_results_page():
    # links_params_changed was counted (peer/core/crawl/outcomes.py) and named
    # in no page.
    source = (ROOT / "peer" / "core" / "crawl" / "outcomes.py").read_text()
    keys = set(re.findall(r'directives\["(\w+)"\]', source))
    page = (ROOT / "docs" / "results.md").read_text()
    assert keys and sorted(k for k in keys if f"`{k}`" not in page) == []
