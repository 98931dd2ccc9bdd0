"""Command-line flags' defaults from the environment: ``--log-level`` from ``RINGCRAWL_LOG_LEVEL``.

A container, a systemd unit or a Kubernetes pod configures a process through
its environment more easily than through its argument list (The Twelve-Factor
App, III "Config"; a StatefulSet's pod learns its own name only as an
environment variable, ``fieldRef: metadata.name``). :func:`apply` gives each
long option ``--foo-bar`` of a parser the default found in
``RINGCRAWL_FOO_BAR``, so one image runs every peer:

- **the command line wins**: the variable only replaces the default, as
  click's ``auto_envvar_prefix`` and pip's ``PIP_<OPTION>`` variables do;
- **shown in --help**: each option's help ends with ``[env RINGCRAWL_...]``;
- **typed like the flag**: the value goes through the option's ``type`` and
  ``choices``; a flag without a value (``--leave``) takes ``1``, ``true``,
  ``yes`` or ``on`` and ``0``, ``false``, ``no`` or ``off``; an empty
  variable counts as unset (compose and Kubernetes write empty ones);
- a value the flag would refuse is a :class:`EnvError`: one line naming the
  variable, which the command prints and exits 2 on, as for a bad flag;
- a required option (``--ring``) is satisfied by its variable.

Flags that destroy data or skip a question (``--fresh``, ``--yes``) are never
read from the environment: a variable outlives the one start it was meant
for, and a service restarted by its manager would start fresh every time.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Collection, Mapping

__all__ = ["EnvError", "PREFIX", "apply", "variable"]

PREFIX = "RINGCRAWL_"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_KINDS: dict[object, str] = {float: "a number", int: "a whole number"}


class EnvError(ValueError):
    """An environment variable holds a value its flag refuses (one line)."""


def variable(option: str, prefix: str = PREFIX) -> str:
    """``--log-level`` -> ``RINGCRAWL_LOG_LEVEL``."""
    return prefix + option.lstrip("-").replace("-", "_").upper()


def _long_option(action: argparse.Action) -> str | None:
    return next((s for s in action.option_strings if s.startswith("--")), None)


def _value(action: argparse.Action, name: str, raw: str) -> object:
    if action.nargs == 0:  # store_true / store_false: a switch
        word = raw.strip().lower()
        if word in _TRUE + _FALSE:
            on = word in _TRUE
            return on if isinstance(action, argparse._StoreTrueAction) else not on
        raise EnvError(f"{name}={raw!r}: expected one of {', '.join(_TRUE + _FALSE)}")
    convert = action.type if callable(action.type) else str
    try:
        value = convert(raw)
    except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
        what = _KINDS.get(convert, getattr(convert, "__name__", "value"))
        detail = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else f"expected {what}"
        raise EnvError(f"{name}={raw!r}: {detail} (as {_long_option(action)})") from None
    if action.choices is not None and value not in action.choices:
        raise EnvError(f"{name}={raw!r}: expected one of {', '.join(map(str, action.choices))} "
                       f"(as {_long_option(action)})")
    return value


def apply(parser: argparse.ArgumentParser, environ: Mapping[str, str], *,
          never: Collection[str] = ("--fresh", "--yes", "--help"), prefix: str = PREFIX) -> None:
    """Give each long option of ``parser`` its default from ``environ`` (module docstring).

    Raises :class:`EnvError` for a value the option refuses. Options in
    ``never`` are not read from the environment and their help says nothing;
    the epilog gets one paragraph saying how the variables work.
    """
    kept = ", ".join(o for o in never if o != "--help")
    note = textwrap.fill(
        f"Each option's default may come from the environment, as the [env ...] after its help "
        f"says (--log-level: {variable('--log-level', prefix)}; a switch takes 1/0, true/false, "
        f"yes/no); the command line wins" + (f"; never {kept}" if kept else "") + ".", 88)
    parser.epilog = f"{parser.epilog}\n{note}" if parser.epilog else note
    for action in parser._actions:
        option = _long_option(action)
        if option is None or option in never or action.nargs not in (None, 0, "?"):
            continue
        if action.nargs == 0 and not isinstance(action, (argparse._StoreTrueAction,
                                                         argparse._StoreFalseAction)):
            continue  # --help, --version, counts: not a setting
        name = variable(option, prefix)
        if action.help is not None and action.help != argparse.SUPPRESS:
            action.help = f"{action.help} [env {name}]"
        raw = environ.get(name, "")
        if raw == "":
            continue
        action.default = _value(action, name, raw)
        action.required = False
