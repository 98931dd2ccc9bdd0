"""The names of ringcrawl's commands as the user starts them: installed, or from a checkout (pure).

``pip install`` puts each command on the PATH under the name pyproject.toml's
``[project.scripts]`` gives it (``ringcrawl``, ``ringcrawl-ring``...); a source
checkout runs the same code as ``python -m peer`` or ``python scripts/merge.py``.
A usage line or a message that tells the user a command to type names it the
way they started theirs, so that a user of the installed commands, who may
have no checkout, is never told of ``scripts/``. A command knows how it was
started from ``sys.argv[0]`` (its driver passes it in): the installed names
are the entry points' file names.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["CHECKOUT", "Command", "INSTALLED", "command", "installed", "spoken"]


class Command(enum.Enum):
    """ringcrawl's commands."""

    PEER = "peer"
    RING = "ring"
    MERGE = "merge"
    REPORT = "report"
    ADOPT = "adopt"
    KEYS = "keys"
    WEBFARM = "webfarm"


#: pyproject.toml's [project.scripts] (tests/project checks they agree).
INSTALLED: Mapping[Command, str] = MappingProxyType({
    Command.PEER: "ringcrawl", Command.RING: "ringcrawl-ring", Command.MERGE: "ringcrawl-merge",
    Command.REPORT: "ringcrawl-report", Command.ADOPT: "ringcrawl-adopt", Command.KEYS: "ringcrawl-keys",
    Command.WEBFARM: "ringcrawl-webfarm",
})
#: The same commands from a source checkout's root.
CHECKOUT: Mapping[Command, str] = MappingProxyType({
    Command.PEER: "python -m peer", Command.RING: "python -m ring", Command.MERGE: "python scripts/merge.py",
    Command.REPORT: "python scripts/report.py", Command.ADOPT: "python scripts/adopt.py",
    Command.KEYS: "python scripts/keys.py", Command.WEBFARM: "python scripts/webfarm.py",
})
_INSTALLED_NAMES = frozenset(INSTALLED.values())


def installed(argv0: str) -> bool:
    """Whether a program whose ``sys.argv[0]`` is ``argv0`` was started as an installed command."""
    name = argv0.replace("\\", "/").rsplit("/", 1)[-1]
    return name.removesuffix(".exe") in _INSTALLED_NAMES  # pip's launchers on Windows end in .exe


def command(cmd: Command, argv0: str) -> str:
    """How to type ``cmd`` for a user whose program was started as ``argv0``."""
    return (INSTALLED if installed(argv0) else CHECKOUT)[cmd]


def spoken(text: str, argv0: str) -> str:
    """``text`` (a help text or message naming commands as a checkout runs them) with each
    command named as ``argv0``'s user types it."""
    if not installed(argv0):
        return text
    for cmd, checkout in CHECKOUT.items():
        text = text.replace(checkout, INSTALLED[cmd])
    return text
