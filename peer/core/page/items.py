"""Extraction rules: items scraped from pages by CSS selectors in cluster.toml.

A user declares, with no code, which pages hold items and where their fields are::

    [extract.book]
    match = "*/product/*"                 # glob on the URL, or "re:<regex>"
    [extract.book.fields]
    title   = "h1.title::text"
    price   = ".price"                    # no suffix means ::text
    cover   = "img.cover::attr(src)"      # URL attributes are made absolute
    authors = "a.author::text*"           # * = every match, as a list
    chapter = { css = "h1::text", strip = "¶ ", re = "Chapter ([0-9]+)" }

Each page whose URL matches gives one row in table ``items_<rule>`` (the
engine and store add ``url``, ``fetched_at`` and ``peer``; this module returns
the field values). Optionally ``[extract] module = "pkg.mod:func"`` names a
function for what selectors cannot say.

**Matching.** ``match`` is an :mod:`fnmatch` glob against the whole
normalised URL, case-sensitive (the scheme and host of a normalised URL are
already lower case; paths are case-sensitive, RFC 3986 §6.2.2.1). ``*``
crosses ``/``, so ``*/product/*`` matches any host. ``re:<regex>`` is
:func:`re.search` instead, anchored only if the regex says so. The matcher is
:func:`peer.core.urls.rules.url_matcher`, which ``crawl.rules`` use too.

**Selectors** are CSS as selectolax's lexbor engine reads it, the parser that
finds links (:mod:`peer.core.page.extract`), so the engine parses a page once and hands
the tree to :func:`extract_items`. A selector ends with an optional suffix:

- ``::text`` (the default): the element's deep text (DOM ``textContent``:
  every descendant text node, ``<script>`` text included, no separator added),
  whitespace runs collapsed to one space and stripped;
- ``::attr(name)``: the attribute's value as written; an attribute present
  without a value is ``""``. Elements without the attribute are skipped, as in
  Scrapy. Attributes that hold a URL (:data:`URL_ATTRS`) are resolved against
  the document base URL (the first ``<base href>``, as link extraction does)
  with :func:`peer.core.urls.normalize.normalize_link`; a value that does not resolve to an
  http(s) URL (``mailto:``, ``data:``, garbage) is kept as written, stripped,
  because the user asked for that attribute and a NULL would hide it.
  ``srcset`` is a list with descriptors, not a URL, so it is kept as written;
- then ``*`` for every match as a list of strings (``[]`` when none),
  at most :data:`MAX_FIELD_TEXT` characters of text in all (nested matches
  repeat their descendants' text, so a hostile page could otherwise make it
  quadratic); without it, the first match's value or ``None``.

``*`` is only a marker after a suffix: ``div > *`` is the CSS universal
selector, and "all the text of ``p.x``" is spelled ``p.x::text*``.

**Post-processing.** A field is a selector string, or a table with the
selector as ``css`` and the steps to apply to each value, always in this
order whatever order they are written in (a TOML table is unordered, TOML
1.0 §"Table", so the order written cannot carry meaning):

1. ``strip = "<chars>"``: :meth:`str.strip` of those characters from both
   ends (``"¶ "`` takes off the ``¶`` permalink documentation generators
   such as Sphinx put inside every heading, and any space before it);
2. ``re = "<regex>"``: :func:`re.search`; the value becomes the first group,
   or the whole match when the regex has no group, as Scrapy's ``re_first``.
   A value it does not match (or whose first group took no part in the
   match) becomes ``None``; in a list (``*``) such elements are dropped, as
   Scrapy's ``re`` drops them.

Values are post-processed after ``::attr`` URLs are made absolute, so a
regex sees the URL the row stores.

**User function.** ``func(url, html, tree)`` gets the normalised URL, the
decoded HTML text and the parsed tree of every HTML page, and returns
``None``, a dict, or an iterable of dicts (at most :data:`MAX_USER_ROWS` a
page are kept). A dict's ``"_table"`` key names its table ``items_<_table>``
(default ``items_custom``); the other keys are columns. Their tables are not
declared, so the store creates one from the first row's keys
(:func:`columns_of`). Every value is stored as text: ``None`` stays NULL,
``bool`` becomes ``"true"``/``"false"``, other scalars ``str()``, and a
list/tuple/set a list of strings. A function that raises, returns something
else, or a row with a bad key, is reported in the ``errors`` list of
:func:`extract_items`, never raised: a bug in user code must not stop a crawl.

Config mistakes (a bad selector, regex, name or module) raise
:class:`~peer.errors.ConfigError` with the key path, at load time.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from peer.errors import ConfigError
from peer.core.urls.normalize import normalize_link
from peer.core.urls.rules import url_matcher

#: Characters of text a ``::text*`` field keeps per page (its list stops there).
MAX_FIELD_TEXT = 1_000_000

__all__ = [
    "DEFAULT_TABLE",
    "MAX_FIELD_TEXT",
    "MAX_USER_ROWS",
    "RESERVED_COLUMNS",
    "URL_ATTRS",
    "ExtractConfig",
    "Field",
    "Rule",
    "columns_of",
    "extract_items",
    "parse_extract",
    "raw_items",
]

#: Columns the engine and store add to every items row.
RESERVED_COLUMNS = frozenset({"url", "fetched_at", "peer"})
#: Table (``items_custom``) of a user function's row without ``"_table"``.
DEFAULT_TABLE = "custom"
#: Rows kept from one call of the user function: a runaway generator must not hang a peer.
MAX_USER_ROWS = 1000
#: Attributes whose value is a URL (HTML Living Standard attribute index), made absolute.
URL_ATTRS = frozenset({"href", "src", "action", "formaction", "data", "poster", "cite",
                       "background", "longdesc", "manifest", "itemid"})

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
# The suffix of a selector: ::text or ::attr(name), then an optional "*".
_SUFFIX = re.compile(r"::(?:(?P<text>text)|attr\(\s*(?P<attr>[A-Za-z_:][-A-Za-z0-9_:.]*)\s*\))(?P<many>\*?)\s*\Z")
# Anything after a last "::" that looks like a pseudo suffix but is not ours.
_PSEUDO = re.compile(r"::\s*[A-Za-z-]*\s*(?:\(.*)?\*?\s*\Z", re.S)
_RULE_KEYS = ("match", "fields")
_FIELD_KEYS = ("css", "strip", "re")
# A tiny document to run each selector on once: selectolax only reports bad
# CSS when a query is made.
_PROBE = LexborHTMLParser("<p></p>")

Row = dict[str, Any]
Item = tuple[str, Row]


@dataclass(frozen=True, slots=True)
class Field:
    """One column of a rule: ``css``, then the element's text or ``attr``; ``many``: a list.

    Each value then loses the characters of ``strip`` at both ends, and is
    replaced by ``regex``'s first group or whole match (``None`` when it does
    not match): :meth:`clean`. ``regex`` is the ``re`` key of cluster.toml.
    """

    name: str
    css: str
    attr: str | None = None
    many: bool = False
    strip: str | None = None
    regex: str | None = None
    _search: Callable[[str], re.Match[str] | None] | None = field(
        init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        # re.error propagates: _parse_field turns it into a ConfigError.
        if self.regex is not None:
            object.__setattr__(self, "_search", re.compile(self.regex).search)

    @property
    def cleans(self) -> bool:
        """Does :meth:`clean` change anything (a ``strip`` or ``re`` is set)?"""
        return self.strip is not None or self.regex is not None

    def clean(self, value: str) -> str | None:
        """``value`` stripped, then its regex capture; ``None`` when the regex does not match."""
        if self.strip is not None:
            value = value.strip(self.strip)
        search = self._search
        if search is None:
            return value
        m = search(value)
        if m is None:
            return None
        # group(1) is None when the first group took no part in the match.
        return m.group(1) if m.re.groups else m.group(0)


@dataclass(frozen=True, slots=True)
class Rule:
    """``[extract.<name>]``: pages whose URL matches ``match`` give a row of ``fields``."""

    name: str
    match: str
    fields: tuple[Field, ...]
    _search: Callable[[str], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # re.error propagates: parse_extract turns it into a ConfigError.
        object.__setattr__(self, "_search", url_matcher(self.match))

    @property
    def table(self) -> str:
        """The rule's table, ``items_<name>``."""
        return f"items_{self.name}"

    def matches(self, url: str) -> bool:
        """Does this (normalised) page URL hold an item of this rule?"""
        return self._search(url) is not None


@dataclass(frozen=True, slots=True)
class ExtractConfig:
    """``[extract]``: the rules, and the optional user function ``module`` (``pkg.mod:func``)."""

    rules: tuple[Rule, ...] = ()
    module: str = ""
    function: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.module and self.function is None:
            object.__setattr__(self, "function", _load_function(self.module))

    def __bool__(self) -> bool:
        return bool(self.rules or self.module)

    def tables(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Each rule's table -> its field columns and DuckDB types (url/fetched_at/peer not included)."""
        return {
            r.table: tuple((f.name, "VARCHAR[]" if f.many else "VARCHAR") for f in r.fields)
            for r in self.rules
        }


def columns_of(row: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(column, DuckDB type) of a cleaned user row: how to create its table from a first row."""
    return tuple((k, "VARCHAR[]" if isinstance(v, list) else "VARCHAR") for k, v in row.items())


# ---------------------------------------------------------------------------
# Parsing [extract]


def parse_extract(table: Any, where: str) -> ExtractConfig:
    """Validate the ``[extract]`` table of cluster.toml ``where``; ConfigError names the key."""
    if not isinstance(table, Mapping):
        raise ConfigError(where, "extract", f"expected a table [extract], got {type(table).__name__} {table!r}")
    rules: list[Rule] = []
    module = ""
    function = None
    seen: dict[str, str] = {}
    for name, value in table.items():
        keypath = f"extract.{name}"
        if name == "module":
            if not isinstance(value, str):
                raise ConfigError(where, keypath, f"expected a string 'pkg.mod:func' ('module' cannot name a rule), got {value!r}")
            module = value
            try:
                function = _load_function(value)
            except ValueError as exc:
                raise ConfigError(where, keypath, str(exc)) from None
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(where, keypath, f"expected a rule table [extract.{name}] with match and fields, or module = 'pkg.mod:func', got {value!r}")
        _check_ident(name, where, keypath, "a rule name (it names table items_<name>)")
        if name.lower() in seen:
            raise ConfigError(where, keypath, f"rule name clashes with extract.{seen[name.lower()]}: table names ignore case")
        seen[name.lower()] = name
        rules.append(_parse_rule(name, value, where, keypath))
    if module and DEFAULT_TABLE in seen:
        raise ConfigError(where, f"extract.{seen[DEFAULT_TABLE]}",
                          f"rule name {DEFAULT_TABLE!r} is the default table of extract.module's rows; rename the rule")
    return ExtractConfig(tuple(rules), module, function)


def _parse_rule(name: str, table: Mapping[str, Any], where: str, prefix: str) -> Rule:
    for key in table:
        if key not in _RULE_KEYS:
            raise ConfigError(where, f"{prefix}.{key}", "unknown key (known: match, fields)")
    match = table.get("match")
    if match is None:
        raise ConfigError(where, f"{prefix}.match", "is required: a URL glob such as '*/product/*', or 're:<regex>'")
    if not isinstance(match, str) or not match.strip() or match.strip() == "re:":
        raise ConfigError(where, f"{prefix}.match", f"expected a URL glob such as '*/product/*', or 're:<regex>', got {match!r}")
    raw_fields = table.get("fields")
    if raw_fields is None:
        raise ConfigError(where, f"{prefix}.fields", f"is required: a table [{prefix}.fields] of name = \"selector\"")
    if not isinstance(raw_fields, Mapping) or not raw_fields:
        raise ConfigError(where, f"{prefix}.fields", f"expected a non-empty table [{prefix}.fields] of name = \"selector\", got {raw_fields!r}")
    fields = []
    lower: set[str] = set()
    for fname, selector in raw_fields.items():
        keypath = f"{prefix}.fields.{fname}"
        _check_ident(fname, where, keypath, "a field name (it names a column)")
        if fname.lower() in lower:
            raise ConfigError(where, keypath, "field name repeats another but for case: column names ignore case")
        lower.add(fname.lower())
        fields.append(_parse_field(fname, selector, where, keypath))
    try:
        return Rule(name, match, tuple(fields))
    except re.error as exc:
        raise ConfigError(where, f"{prefix}.match", f"expected a valid regex after 're:', got {match[3:]!r} ({exc})") from None


def _parse_field(name: str, value: Any, where: str, keypath: str) -> Field:
    """A field: a selector string, or a table of ``css`` and its post-processing steps."""
    if not isinstance(value, Mapping):
        return _parse_selector(name, value, where, keypath)
    for key in value:
        if key not in _FIELD_KEYS:
            raise ConfigError(where, f"{keypath}.{key}", f"unknown key (known: {', '.join(_FIELD_KEYS)})")
    if "css" not in value:
        raise ConfigError(where, f"{keypath}.css", "is required: the selector, such as 'h1::text'")
    f = _parse_selector(name, value["css"], where, f"{keypath}.css")
    strip = value.get("strip")
    if strip is not None and (not isinstance(strip, str) or not strip):
        raise ConfigError(where, f"{keypath}.strip",
                          f"expected the characters to strip from both ends, such as '¶ ', got {strip!r}")
    regex = value.get("re")
    if regex is not None and (not isinstance(regex, str) or not regex):
        raise ConfigError(where, f"{keypath}.re", f"expected a regex such as '([0-9]+)', got {regex!r}")
    try:
        return Field(name, f.css, f.attr, f.many, strip, regex)
    except re.error as exc:
        raise ConfigError(where, f"{keypath}.re", f"expected a valid regex, got {regex!r} ({exc})") from None


def _parse_selector(name: str, selector: Any, where: str, keypath: str) -> Field:
    expected = "a CSS selector with an optional ::text, ::attr(name) and '*', such as 'a.author::text*'"
    if not isinstance(selector, str) or not selector.strip():
        if keypath.endswith(".css"):
            raise ConfigError(where, keypath, f"expected {expected}, got {selector!r}")
        raise ConfigError(where, keypath, f"expected {expected}, or a table {{ css = ..., strip = ..., re = ... }}, "
                          f"got {selector!r}")
    css, attr, many = selector, None, False
    m = _SUFFIX.search(selector)
    if m is not None:
        css, attr, many = selector[: m.start()], m["attr"], bool(m["many"])
        attr = attr.lower() if attr else None  # HTML parsers lower-case attribute names
    elif (i := selector.rfind("::")) >= 0 and _PSEUDO.match(selector, i):
        if selector[i + 2 :].lstrip().startswith("attr"):
            raise ConfigError(where, keypath, f"expected ::attr(name) with one attribute name and a closing ')', got {selector[i:]!r}")
        raise ConfigError(where, keypath, f"unknown suffix {selector[i:]!r}: expected ::text or ::attr(name), optionally followed by '*'")
    css = css.strip()
    if not css:
        raise ConfigError(where, keypath, f"expected a CSS selector before {selector.strip()!r}")
    try:
        _PROBE.css(css)
    except (SelectolaxError, ValueError):
        hint = "; for every match write ::text* or ::attr(name)*" if css.endswith("*") else ""
        raise ConfigError(where, keypath, f"expected a CSS selector selectolax accepts, got {css!r}{hint}") from None
    return Field(name, css, attr, many)


def _check_ident(name: str, where: str, keypath: str, what: str) -> None:
    if not _IDENT.fullmatch(name):
        raise ConfigError(where, keypath, f"expected {what} of letters, digits and '_', not starting with a digit, got {name!r}")
    if name.lower() in RESERVED_COLUMNS:
        raise ConfigError(where, keypath, f"{name!r} is reserved (url, fetched_at and peer are added to every row)")


def _load_function(spec: str) -> Callable[..., Any]:
    """Import ``pkg.mod:func``; ValueError says what went wrong."""
    if not _MODULE.fullmatch(spec):
        raise ValueError(f"expected 'pkg.mod:func' (a module path, ':', a function name), got {spec!r}")
    modname, _, funcname = spec.partition(":")
    try:
        mod = importlib.import_module(modname)
    except Exception as exc:  # the user's module can fail in any way while importing
        raise ValueError(
            f"cannot import {modname!r} ({type(exc).__name__}: {exc}); is its directory on PYTHONPATH?"
        ) from None
    func = getattr(mod, funcname, None)
    if not callable(func):
        raise ValueError(f"module {modname!r} has no function {funcname!r}")
    return cast(Callable[..., Any], func)


# ---------------------------------------------------------------------------
# Applying


def extract_items(
    cfg: ExtractConfig, url: str, html: str, tree: LexborHTMLParser | None = None
) -> tuple[list[Item], list[str]]:
    """(items, errors) of the HTML page at the normalised ``url``.

    ``items`` are (table, row) for each matching rule, in config order, then
    each row of the user function. ``tree`` is the page parsed by
    selectolax's lexbor parser; when None, ``html`` is parsed here, and only if
    a rule matches or a user function is set. Never raises for any page:
    errors of the user function come back as one line each in ``errors``.
    """
    items: list[Item] = []
    errors: list[str] = []
    base: list[str] = []  # the document base URL, found once when first needed
    for rule in cfg.rules:
        if rule._search(url) is None:
            continue
        if tree is None:
            tree = LexborHTMLParser(html)
        items.append((rule.table, _apply(rule, url, tree, base)))
    if cfg.function is not None:
        if tree is None:
            tree = LexborHTMLParser(html)
        _call_user(cfg, url, html, tree, items, errors)
    return items, errors


def raw_items(cfg: ExtractConfig, url: str, tree: LexborHTMLParser) -> dict[str, Row]:
    """Each rule matching ``url``: its table -> the field values before ``strip`` and ``re``.

    What a user compares the stored row with, to see what post-processing did.
    """
    base: list[str] = []
    return {r.table: _select(r, url, tree, base) for r in cfg.rules if r.matches(url)}


def _apply(rule: Rule, url: str, tree: LexborHTMLParser, base: list[str]) -> Row:
    row = _select(rule, url, tree, base)
    for f in rule.fields:
        if f.cleans:
            row[f.name] = _cleaned(f, row[f.name])
    return row


def _cleaned(f: Field, value: str | list[str] | None) -> str | list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return f.clean(value)
    return [c for c in map(f.clean, value) if c is not None]


def _select(rule: Rule, url: str, tree: LexborHTMLParser, base: list[str]) -> Row:
    """Each field's value as its selector finds it, before :meth:`Field.clean`."""
    row: Row = {}
    for f in rule.fields:
        attr = f.attr
        if attr is None:
            if f.many:
                row[f.name] = _texts(tree.css(f.css))
            else:
                node = tree.css_first(f.css)
                row[f.name] = None if node is None else " ".join(node.text().split())
            continue
        values = []
        for node in tree.css(f.css):
            attrs = node.attributes
            if attr in attrs:
                values.append(attrs[attr] or "")
                if not f.many:
                    break
        if attr in URL_ATTRS and values:
            if not base:
                base.append(_base_url(url, tree))
            values = [_absolute(base[0], v) for v in values]
        row[f.name] = values if f.many else (values[0] if values else None)
    return row


def _texts(nodes: Iterable[Any]) -> list[str]:
    """The text of each match, up to :data:`MAX_FIELD_TEXT` characters in all.

    Nested matches each hold their descendants' text, so the sum grows with
    the square of the nesting (4,000 nested ``<span>`` of one character make
    8 M characters): a hostile page must not turn that into memory or
    hours of work. The list stops at the cap.
    """
    out: list[str] = []
    total = 0
    for n in nodes:
        text = " ".join(n.text().split())
        total += len(text)
        if total > MAX_FIELD_TEXT:
            break
        out.append(text)
    return out


def _base_url(url: str, tree: LexborHTMLParser) -> str:
    # HTML §2.4.1 "document base URL": the first <base href>, resolved against
    # the page URL; one that does not resolve is ignored (peer.core.page.extract does the same).
    node = tree.css_first("base[href]")
    if node is None:
        return url
    return normalize_link(url, node.attributes.get("href") or "") or url


def _absolute(base: str, value: str) -> str:
    return normalize_link(base, value) or value.strip()


def _call_user(cfg: ExtractConfig, url: str, html: str, tree: LexborHTMLParser,
               items: list[Item], errors: list[str]) -> None:
    assert cfg.function is not None
    rule_tables = {r.table for r in cfg.rules}
    where = cfg.module
    try:
        result = cfg.function(url, html, tree)
        if result is None:
            return
        if isinstance(result, Mapping):
            result = (result,)
        elif isinstance(result, (str, bytes)) or not isinstance(result, Iterable):
            errors.append(f"{where}: returned {type(result).__name__}; expected a dict, an iterable of dicts or None")
            return
        n = 0
        for row in result:
            if n == MAX_USER_ROWS:
                errors.append(f"{where}: more than {MAX_USER_ROWS} rows for one page; the rest were dropped")
                break
            n += 1
            item = _user_row(row, rule_tables)
            if isinstance(item, str):
                errors.append(f"{where}: {item}")
            else:
                items.append(item)
    except Exception as exc:  # user code: report it, keep crawling
        errors.append(f"{where}: {type(exc).__name__}: {_message(exc)}")


def _user_row(row: Any, rule_tables: set[str]) -> Item | str:
    """(table, cleaned row), or what is wrong with the row."""
    if not isinstance(row, Mapping):
        return f"a row is {type(row).__name__}, expected a dict"
    table = row.get("_table", DEFAULT_TABLE)
    if not isinstance(table, str) or not _IDENT.fullmatch(table):
        return f"'_table' must be a name of letters, digits and '_', got {table!r}"
    full = f"items_{table}"
    if full in rule_tables:
        return f"'_table' {table!r} is the table of rule extract.{table}; pick another name"
    out: Row = {}
    for key, value in row.items():
        if key == "_table":
            continue
        if not isinstance(key, str) or not _IDENT.fullmatch(key):
            return f"column {key!r} is not a name of letters, digits and '_'"
        if key.lower() in RESERVED_COLUMNS:
            return f"column {key!r} is reserved (url, fetched_at and peer are added to every row)"
        out[key] = _cell(value)
    if not out:
        return f"a row for {full} has no columns"
    return full, out


def _cell(value: Any) -> str | list[str | None] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        return [v if v is None or isinstance(v, str) else _scalar(v) for v in value]
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _message(exc: Exception) -> str:
    try:
        text = str(exc)
    except Exception:  # a user exception whose __str__ fails
        text = "(message unavailable)"
    return " ".join(text.split())[:500]
