"""Scope by URL: include/exclude rules, skipped file extensions, query-parameter rules.

Four keys of ``[crawl]`` (pure: strings in, verdicts out). The crawl core
checks a URL in this order, and the first check that leaves it out is the
one counted (``stats.json`` ``dropped``, ``ring status``):

1. the host scope (``allow_hosts``, ``deny_hosts``, ``max_depth``:
   :class:`peer.core.urls.scope.Scope`), as before these rules: counted
   ``out_of_scope``;
2. **identity** [``strip_params``, ``sort_query``]: not a verdict but part
   of what a URL *is*. :func:`peer.core.urls.normalize.normalize` and ``normalize_link``
   apply :class:`ParamRules` after RFC 3986 normalisation, so the seen set,
   forwarding, the frontier and the results hold ``/p`` for
   ``/p?utm_source=x``; the checks below see the stripped URL;
3. ``skip_extensions``: the last path segment's extension: counted
   ``skip_extensions``;
4. ``rules``, first match decides: counted ``rules``.

**Rules** [``crawl.rules``] are one list of strings,
``"include:<pattern>"`` or ``"exclude:<pattern>"``, tried in order on the
whole normalised URL; the first that matches decides, as in Nutch's
regex-urlfilter.txt. ``<pattern>`` is the ``[extract]`` rules' ``match``
(:func:`url_matcher`, which :mod:`peer.core.page.items` uses too): a glob,
case-sensitive, where ``*`` crosses ``/``, or ``re:<regex>`` searched. One
list, not ``[[crawl.rule]]`` tables: the order is the meaning, and a list
shows it at a glance, one rule a line, each named in messages by its index
(``crawl.rules[2]``); a table of two keys a rule would say the same in three
lines. Words, not Nutch's ``+``/``-``: a regex may itself begin with either.

When **no rule matches**: excluded if the list has any ``include`` rule,
else included. An include rule says "only these"; letting what matches
nothing through would make ``include:*/library/*`` mean nothing. A list of
only excludes says "all but these". (Nutch rejects what matches nothing and
needs a final ``+.``; Scrapy's ``allow``/``deny`` behave like this module.)
To include a few paths and exclude inside them, put the exclusion first:
``["exclude:*/library/search*", "include:*/library/*"]``.

**Extensions** [``crawl.skip_extensions``]: the text after the last ``.``
of the URL path's last segment (path parameters after ``;`` left out),
compared case-insensitively; an entry with a dot (``tar.gz``) is compared
with the segment's end. A segment without a dot, or a dotfile
(``/.well-known``), has no extension. The default, :data:`DEFAULT_SKIP_EXTENSIONS`,
is what an HTML crawler cannot read (it parses only HTML for links and
items) and that costs a request, politeness time and up to ``max_body``
bytes for no link: images, audio, video, archives and packages, binaries,
fonts, office documents, PDF and PostScript, stylesheets. It follows
Scrapy's ``IGNORED_EXTENSIONS`` and the suffix line of Nutch's default
regex-urlfilter.txt ("skip image and other suffixes we can't parse"), with
newer formats (``avif``, ``webp``, ``woff2``, ``zst``) and without those
that are page slugs too often: ``js``, which both skip
(``/blog/intro-to-node.js`` is an article), ``ai`` (a slug naming a
``.ai`` domain), and without feeds and data (``xml``, ``rss``, ``json``,
``txt``): sitemaps and feeds are link sources. The rules
of step 4 cannot bring a skipped extension back: remove it from the list.

**Parameters** [``crawl.strip_params``, ``crawl.sort_query``]: the query is
split on ``&``; a parameter whose name (the text before the first ``=``,
all of it when there is none) matches a glob of the list, case-insensitive,
is removed with its value, however often it occurs and whatever its value
(``fbclid=``, ``fbclid``). Names are matched as normalisation left them:
escapes of unreserved characters decoded (``utm%5Fsource`` is
``utm_source``, RFC 3986 §6.2.2.2). Path parameters (``;name=value`` in
any path segment, as the Java Servlet spec's ``;jsessionid=`` URL
rewriting writes) are matched by the same list. A query left empty is
dropped (``/p?utm_source=x`` -> ``/p``). Other parameters keep their order
and spelling: servers may read ``?a=1&b=2`` and ``?b=2&a=1`` differently,
so ``sort_query`` is off by default; on, parameters are sorted by name,
stably (repeated names keep their order: ``?id=2&id=1`` is a list to most
servers) and empty ones (``&&``) dropped. A separator ``;`` in a query is not
split on (HTML 4 once suggested it; WHATWG URL and servers today do not).

The default strip list, :data:`DEFAULT_STRIP_PARAMS`, holds names that
never choose content: campaign tags (``utm_*``), ad click ids (Google's
``gclid``, ``gbraid``, ``wbraid``, ``dclid``; Microsoft's ``msclkid``;
Meta's ``fbclid``, ``igshid``; Yandex's ``yclid``), Mailchimp's ``mc_cid``,
``mc_eid``, Google Analytics' linker ``_ga``, ``_gl``; and session ids of
platforms that name them so and fall back to a cookie or a fresh session
without them: ``jsessionid`` (Java servlets), ``phpsessid`` (PHP's
``session.use_trans_sid``), ``cfid``, ``cftoken`` (ColdFusion). Not
``sid``: phpBB's session id, but elsewhere a story, section or site id, and
stripping a parameter that chooses content merges pages, which loses them
(a duplicate only costs a fetch). Heritrix strips ``sid`` only when its
value is 32 hex digits; add ``"sid"`` here for a site where it is a
session id.

Config mistakes raise :class:`~peer.errors.ConfigError` naming the key
(``crawl.rules[2]``) at load time (:func:`parse_url_rules`).
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from peer.errors import ConfigError

__all__ = [
    "DEFAULT_SKIP_EXTENSIONS",
    "DEFAULT_STRIP_PARAMS",
    "Cause",
    "Judgement",
    "ParamRules",
    "Rule",
    "UrlRuleKeys",
    "UrlRules",
    "parse_pattern",
    "parse_url_rules",
    "url_matcher",
]

DEFAULT_SKIP_EXTENSIONS = (
    # images
    "avif", "bmp", "eps", "gif", "heic", "ico", "jpeg", "jpg", "png", "psd", "svg", "tif",
    "tiff", "webp",
    # audio
    "aac", "aiff", "flac", "m4a", "mid", "midi", "mp3", "oga", "ogg", "opus", "wav", "wma",
    # video
    "3gp", "avi", "flv", "m4v", "mkv", "mov", "mp4", "mpeg", "mpg", "ogv", "swf", "webm", "wmv",
    # archives and packages
    "7z", "apk", "bz2", "deb", "dmg", "gz", "iso", "jar", "msi", "rar", "rpm", "tar", "tgz",
    "xz", "zip", "zst",
    # binaries
    "bin", "dll", "exe",
    # fonts
    "eot", "otf", "ttf", "woff", "woff2",
    # office documents, PDF, PostScript
    "doc", "docx", "odp", "ods", "odt", "pdf", "ppt", "pptx", "ps", "rtf", "xls", "xlsx",
    # stylesheets
    "css",
)

DEFAULT_STRIP_PARAMS = (
    "utm_*", "fbclid", "gclid", "gbraid", "wbraid", "dclid", "msclkid", "mc_cid", "mc_eid",
    "_ga", "_gl", "yclid", "igshid",
    "jsessionid", "phpsessid", "cfid", "cftoken",
)

# Parameter names remembered with their verdict: names repeat across a
# crawl (page, id, utm_source), a glob alternation costs about a µs, and a
# hostile page may invent names, hence the bound.
_NAME_MEMO = 4096
# Extensions or parameter names --check lists one by one; more are counted.
_LISTED = 8
_RULE_FORMS = "'include:<glob>', 'exclude:<glob>', 'include:re:<regex>' or 'exclude:re:<regex>'"


def url_matcher(pattern: str) -> Callable[[str], object]:
    """The test of a URL pattern: truthy when the (normalised) URL matches.

    ``re:<regex>`` is :func:`re.search`; anything else a glob
    (:func:`fnmatch.translate`) on the whole URL, case-sensitive, ``*``
    crossing ``/``. :class:`re.error` propagates: the caller names the key.
    """
    if pattern.startswith("re:"):
        return re.compile(pattern[3:]).search
    return re.compile(fnmatch.translate(pattern)).match


class Cause(enum.StrEnum):
    """Why a URL in the host scope is left out (the value is its config key and counter)."""

    EXTENSION = "skip_extensions"
    RULE = "rules"


@dataclass(frozen=True, slots=True)
class Rule:
    """``crawl.rules[index]``: ``include`` or exclude the URLs ``pattern`` matches."""

    index: int
    include: bool
    pattern: str
    matches: Callable[[str], object] = field(repr=False, compare=False)
    #: Where the rule is written: ``crawl.rules``, or a ``[[site]]`` block's ``site[i].rules``.
    keypath: str = "crawl.rules"

    def __str__(self) -> str:
        return f"{self.keypath}[{self.index}] {self.pattern!r}"


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the URL rules say of one URL, and why (``python -m peer try``, ``--check``)."""

    excluded: Cause | None
    rule: Rule | None = None          # the rule that decided; None: none matched, or the extension
    extension: str | None = None      # the skipped extension
    unmatched: bool = False           # rules exist and none matched: the default decided
    keypath: str = "crawl.rules"      # the list that judged (a [[site]] block's, or the global one)

    def why(self) -> str:
        """One phrase: ``excluded by crawl.rules[2] 're:[?&]q='``, ``included by ...``."""
        if self.excluded is Cause.EXTENSION:
            return f"excluded by crawl.skip_extensions ({self.extension!r})"
        if self.rule is not None:
            return f"{'excluded' if self.excluded else 'included'} by {self.rule}"
        key = self.keypath
        if self.unmatched:
            return (f"excluded by {key}: no rule matches, and the list has include rules"
                    if self.excluded else f"included: no {key} matches, and the list has no include rule")
        return f"no {key}"


_NO_RULES = Judgement(None)


@dataclass(frozen=True, slots=True)
class ParamRules:
    """``strip_params`` and ``sort_query``: what query and path parameters a URL's identity leaves out."""

    strip: tuple[str, ...] = ()
    sort: bool = False
    _strip: Callable[[str], object] | None = field(init=False, repr=False, compare=False)
    _memo: dict[str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        globs = tuple(p.lower() for p in self.strip)
        object.__setattr__(self, "strip", globs)
        pattern = "|".join(fnmatch.translate(p) for p in globs)
        object.__setattr__(self, "_strip", re.compile(pattern, re.I).match if globs else None)
        object.__setattr__(self, "_memo", {})

    def __bool__(self) -> bool:
        return bool(self.strip or self.sort)

    def _drops(self, name: str) -> bool:
        verdict = self._memo.get(name)
        if verdict is None:
            assert self._strip is not None
            verdict = self._strip(name) is not None
            if len(self._memo) >= _NAME_MEMO:
                self._memo.clear()
            self._memo[name] = verdict
        return verdict

    def apply(self, path: str, query: str | None) -> tuple[str, str | None]:
        """(path, query) of a normalised URL without the stripped parameters, the query sorted.

        ``None`` or ``""``: no query. :func:`peer.core.urls.normalize.normalize` calls
        this after its own steps, and :meth:`clean` on a normalised URL.
        """
        if self._strip is not None:
            if ";" in path:
                path = self._strip_path(path)
            if query:
                parts = query.split("&")
                kept = [p for p in parts if not self._drops(p.partition("=")[0])]
                if len(kept) != len(parts):
                    query = "&".join(kept)
        if self.sort and query and "&" in query:
            query = "&".join(sorted([p for p in query.split("&") if p],
                                    key=lambda p: p.partition("=")[0]))
        return path, query

    def _strip_path(self, path: str) -> str:
        segments = path.split("/")
        changed = False
        for i, seg in enumerate(segments):
            if ";" in seg:
                head, *params = seg.split(";")
                kept = [p for p in params if not self._drops(p.partition("=")[0])]
                if len(kept) != len(params):
                    segments[i] = ";".join([head, *kept])
                    changed = True
        return "/".join(segments) if changed else path

    def clean(self, url: str) -> str:
        """A normalised URL with the rules applied (unchanged, the same object, when none applies)."""
        q = url.find("?")
        if q < 0:
            if ";" not in url or self._strip is None:
                return url
            head, query = url, None
        else:
            head, query = url[:q], url[q + 1:]
        start = head.find("/", head.find("//") + 2)
        path, new_query = self.apply(head[start:], query)
        if new_query == query and path == head[start:]:
            return url
        base = head[:start] + path
        return f"{base}?{new_query}" if new_query else base

    def removed(self, url: str) -> list[str]:
        """The names of the parameters :meth:`clean` takes out of a normalised URL, in order."""
        if self._strip is None:
            return []
        head, _, query = url.partition("?")
        path = head[head.find("/", head.find("//") + 2):]
        names = [p.partition("=")[0] for seg in path.split("/") for p in seg.split(";")[1:]]
        names += [p.partition("=")[0] for p in query.split("&")] if query else []
        return [n for n in names if self._drops(n)]


@dataclass(frozen=True, slots=True)
class UrlRules:
    """The URL rules of ``[crawl]``: ``rules``, ``skip_extensions`` and the :class:`ParamRules`."""

    rules: tuple[Rule, ...] = ()
    skip_extensions: frozenset[str] = frozenset()
    params: ParamRules | None = None
    _includes: bool = field(init=False, repr=False, compare=False)
    _dotted: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_includes", any(r.include for r in self.rules))
        object.__setattr__(self, "_dotted", tuple("." + e for e in self.skip_extensions if "." in e))

    def __bool__(self) -> bool:
        return bool(self.rules or self.skip_extensions)

    def skipped_extension(self, url: str) -> str | None:
        """The entry of ``skip_extensions`` a normalised URL's last path segment ends in, or None."""
        end = url.find("?")
        if end < 0:
            end = len(url)
        seg = url[url.rfind("/", 0, end) + 1:end]
        semi = seg.find(";")
        if semi >= 0:
            seg = seg[:semi]
        dot = seg.rfind(".")
        if dot <= 0:
            return None
        ext = seg[dot + 1:].lower()
        if ext in self.skip_extensions:
            return ext
        if self._dotted:
            low = seg.lower()
            for dotted in self._dotted:
                if low.endswith(dotted) and len(low) > len(dotted):
                    return dotted[1:]
        return None

    def first_rule(self, url: str) -> Rule | None:
        """The first rule that matches a normalised URL, or None."""
        for rule in self.rules:
            if rule.matches(url):
                return rule
        return None

    def excluded(self, url: str) -> Cause | None:
        """Why a normalised URL (parameters stripped) is left out, or None: the crawl's hot path."""
        if self.skip_extensions and self.skipped_extension(url) is not None:
            return Cause.EXTENSION
        if self.rules:
            rule = self.first_rule(url)
            if rule is None:
                return Cause.RULE if self._includes else None
            return None if rule.include else Cause.RULE
        return None

    def judge(self, url: str) -> Judgement:
        """:meth:`excluded`, with the rule or extension that decided."""
        ext = self.skipped_extension(url) if self.skip_extensions else None
        if ext is not None:
            return Judgement(Cause.EXTENSION, extension=ext)
        if not self.rules:
            return _NO_RULES
        rule = self.first_rule(url)
        if rule is None:
            return Judgement(Cause.RULE if self._includes else None, unmatched=True,
                             keypath=self.rules[0].keypath)
        return Judgement(None if rule.include else Cause.RULE, rule, keypath=rule.keypath)

    def describe(self) -> str:
        """One line for ``--check``: the rules in force."""
        rules = ", ".join(f"{'include' if r.include else 'exclude'} {r.pattern!r}" for r in self.rules)
        if self.rules:
            rules += ("; matching none: excluded" if self._includes else "; matching none: included")
        skip = self.skip_extensions
        if skip == frozenset(DEFAULT_SKIP_EXTENSIONS):
            ext = f"the default {len(skip)} extensions skipped"
        elif len(skip) > _LISTED:
            ext = f"{len(skip)} extensions skipped"
        else:
            ext = f"extensions skipped: {', '.join(sorted(skip)) or 'none'}"
        strip = self.params.strip if self.params else ()
        if strip == tuple(DEFAULT_STRIP_PARAMS):
            params = f"params stripped: the default {len(strip)} ({', '.join(strip[:3])}...)"
        elif len(strip) > _LISTED:
            params = f"params stripped: {', '.join(strip[:_LISTED])} and {len(strip) - _LISTED} more"
        else:
            params = f"params stripped: {', '.join(strip) or 'none'}"
        sort = "; query sorted" if self.params and self.params.sort else ""
        return f"rules: {rules or 'none'}; {ext}; {params}{sort}"


# ---------------------------------------------------------------------------
# Parsing [crawl] rules, skip_extensions, strip_params


def parse_pattern(pattern: str, text: str, where: str, key: str, forms: str) -> Callable[[str], object]:
    """:func:`url_matcher` of the ``pattern`` part of the entry ``text`` at ``key``;
    :class:`ConfigError` for an empty pattern or a bad regex (``forms``: the entry's forms, said)."""
    if pattern in ("", "re:"):
        raise ConfigError(where, key, f"expected a pattern after {text!r} ({forms})")
    try:
        return url_matcher(pattern)
    except re.error as exc:
        raise ConfigError(where, key, f"expected a valid regex after 're:', got {pattern[3:]!r} ({exc})") from None


def _rule(text: str, index: int, where: str, keypath: str = "crawl.rules") -> Rule:
    key = f"{keypath}[{index}]"
    action, sep, pattern = text.partition(":")
    if not sep or action not in ("include", "exclude"):
        raise ConfigError(where, key, f"expected {_RULE_FORMS}, got {text!r}")
    matches = parse_pattern(pattern, text, where, key, _RULE_FORMS)
    return Rule(index, action == "include", pattern, matches, keypath)


def _extensions(values: Iterable[str], where: str) -> frozenset[str]:
    out = set()
    for i, value in enumerate(values):
        ext = value.strip().lower().removeprefix(".")
        if not ext or re.search(r"[/?#;\s*]", ext) or ext.endswith("."):
            raise ConfigError(where, f"crawl.skip_extensions[{i}]",
                              f"expected a file extension such as 'pdf' or 'tar.gz', got {value!r}")
        out.add(ext)
    return frozenset(out)


def _param_names(values: Iterable[str], where: str) -> tuple[str, ...]:
    out = []
    for i, value in enumerate(values):
        if not value or re.search(r"[&=#?/;\s]", value):
            raise ConfigError(where, f"crawl.strip_params[{i}]",
                              f"expected a parameter name or glob such as 'utm_*', got {value!r}")
        out.append(value)
    return tuple(out)


def parse_rules(texts: Iterable[str], where: str, keypath: str) -> tuple[Rule, ...]:
    """Include/exclude rules written as ``keypath`` (``crawl.rules``, ``site[0].rules``);
    :class:`ConfigError` names the entry at fault."""
    return tuple(_rule(text, i, where, keypath) for i, text in enumerate(texts))


class UrlRuleKeys(Protocol):
    """The ``[crawl]`` keys the URL rules are read from (``CrawlConfig`` has them): a
    protocol, so that this module sits below the config that declares them."""

    @property
    def rules(self) -> tuple[str, ...]: ...
    @property
    def skip_extensions(self) -> tuple[str, ...]: ...
    @property
    def strip_params(self) -> tuple[str, ...]: ...
    @property
    def sort_query(self) -> bool: ...


def parse_url_rules(crawl: UrlRuleKeys, where: str) -> UrlRules:
    """The URL rules of a ``[crawl]`` section; :class:`ConfigError` names the key at fault."""
    rules = parse_rules(crawl.rules, where, "crawl.rules")
    params = ParamRules(_param_names(crawl.strip_params, where), crawl.sort_query)
    return UrlRules(rules, _extensions(crawl.skip_extensions, where), params if params else None)
