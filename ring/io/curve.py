"""CurveZMQ key files: who the ring's peers are, by public key (docs/curve.md).

With ``[ring] curve_keys`` set, every peer's ROUTER is a Curve server
(RFC 26, CurveZMQ) that admits only the public keys found in that directory,
and every DEALER proves its own key and checks the server's. This module is
the key files only; the Curve socket hooks and the ZAP handler (RFC 27) that
applies the allow-list are in :mod:`ring.io.zap`.

Layout of the keys directory, the one ``zmq.auth.create_certificates`` writes
(czmq's ``zcert``), so ``zmq.auth.load_certificate`` reads these files too::

    keys/p1.key          public key (Z85): copied to every machine of the ring
    keys/p1.key_secret   public + secret key: only on p1's machine, mode 0600

Every ``*.key`` in the directory is a member's key: adding ``p4.key`` to a
running ring's directories lets a joiner p4 in at its next handshake (the
authenticator re-reads the directory when it changes), and the file name is
the peer id a DEALER looks up to learn the public key of the peer it dials.

Mistakes (missing file, malformed key, a secret readable by others, a public
file holding a secret) raise :class:`~ring.errors.RingError` with one line
naming the file and the way out.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType

from ring.commandnames import spoken
from ring.errors import RingError

__all__ = [
    "CurveKeys",
    "PUBLIC_SUFFIX",
    "SECRET_SUFFIX",
    "UNAUTHENTICATED_WARNING",
    "unauthenticated_warning",
    "read_public",
    "read_secret",
    "resolve_keys_dir",
    "write_keypair",
    "write_public",
]

PUBLIC_SUFFIX = ".key"
SECRET_SUFFIX = ".key_secret"

#: The one warning a peer logs at start when ``[ring] curve_keys`` is empty.
UNAUTHENTICATED_WARNING = (
    "ring.curve_keys is not set: this peer accepts messages from anyone who can reach "
    "its address, and ring traffic is unencrypted (see docs/curve.md)"
)



def unauthenticated_warning(addresses: Iterable[str]) -> str | None:
    """The warning for a ring without ``curve_keys``, or None when every address is loopback.

    On loopback only this machine's processes can reach the ring, so Curve
    adds nothing a user must be warned about (the demo, a solo peer, tests);
    any other address, or one that is not a literal (a name may resolve to
    another machine), keeps the warning.
    """
    for address in addresses:
        m = re.fullmatch(r"tcp://\[?(?P<host>[^\]]*?)\]?:\d+", address)
        host = m["host"] if m else ""
        if host == "localhost":
            continue
        try:
            if ipaddress.ip_address(host).is_loopback:
                continue
        except ValueError:
            pass
        return UNAUTHENTICATED_WARNING
    return None


# The peer-id rule of peer/core/config/cluster.py; it also keeps an id from naming a path
# outside the keys directory ("../x").
_PEER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}
_LINE = re.compile(r'(public-key|secret-key)\s*=\s*(.*)')

_BANNER = """\
#   ****  Generated on {now} by ringcrawl scripts/keys.py  ****
#   ZeroMQ CURVE {kind} Certificate of ring peer {peer_id!r}
#   {advice}

metadata
    peer-id = "{peer_id}"
curve
"""
_PUBLIC_ADVICE = "Public: copy it into the keys directory of every machine of the ring."
_SECRET_ADVICE = "SECRET: keep it on this peer's machine only, mode 0600; never copy it elsewhere."


def _is_z85_key(text: str) -> bool:
    """True for the 40-character Z85 text of a 32-byte Curve25519 key (ZMQ RFC 32)."""
    if len(text) != 40 or any(c not in _Z85_VALUE for c in text):
        return False
    for i in range(0, 40, 5):
        value = 0
        for c in text[i:i + 5]:
            value = value * 85 + _Z85_VALUE[c]
        if value >= 1 << 32:  # five characters can spell more than four bytes hold
            return False
    return True


def _check_peer_id(peer_id: str) -> None:
    if not _PEER_ID.fullmatch(peer_id):
        raise RingError(f"peer id {peer_id!r}: expected 1-64 characters of letters, digits, "
                        "'_', '.', '-' (starting with a letter or digit)")


def _read_keys(path: Path) -> dict[str, str]:
    """The ``public-key``/``secret-key`` values of a certificate file (ZPL, czmq's format)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RingError(spoken(f"{path}: no such key file (generate keys with "
                               "python scripts/keys.py --ring cluster.toml; see docs/curve.md)", sys.argv[0])) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RingError(f"{path}: cannot read key file: {getattr(exc, 'strerror', None) or exc}") from None
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.fullmatch(line.strip())
        if m:
            name, value = m[1], m[2].strip().strip("\"'")
            if not _is_z85_key(value):
                raise RingError(spoken(f"{path}: {name} is not a 40-character Z85 Curve key "
                                       "(regenerate with python scripts/keys.py --force)", sys.argv[0]))
            found[name] = value
    return found


def read_public(path: str | Path) -> bytes:
    """The Z85 public key of a ``.key`` file (refused if it also holds a secret)."""
    p = Path(path)
    keys = _read_keys(p)
    if "secret-key" in keys:
        raise RingError(f"{p}: holds a secret key, but .key files are copied to every machine; "
                        f"the secret belongs in a {SECRET_SUFFIX} file only")
    if "public-key" not in keys:
        raise RingError(f"{p}: no public-key line (expected a certificate written by scripts/keys.py)")
    return keys["public-key"].encode("ascii")


def read_secret(path: str | Path) -> tuple[bytes, bytes]:
    """(public, secret) Z85 keys of a ``.key_secret`` file, refused if others may read it."""
    p = Path(path)
    keys = _read_keys(p)
    if os.name == "posix":
        mode = stat.S_IMODE(p.stat().st_mode)
        if mode & 0o077:
            # ssh refuses such keys too: a secret others can read is no longer secret.
            raise RingError(f"{p}: permissions {mode:04o} are too open for a secret key; "
                            f"run: chmod 600 {p}")
    for name in ("public-key", "secret-key"):
        if name not in keys:
            raise RingError(f"{p}: no {name} line (expected a secret certificate written by scripts/keys.py)")
    return keys["public-key"].encode("ascii"), keys["secret-key"].encode("ascii")


def resolve_keys_dir(curve_keys: str, config_path: str | Path) -> Path | None:
    """``[ring] curve_keys`` as an absolute directory (relative to cluster.toml's); None when empty."""
    if not curve_keys:
        return None
    d = Path(curve_keys).expanduser()
    return d if d.is_absolute() else Path(config_path).resolve().parent / d


def write_keypair(directory: str | Path, peer_id: str, public: bytes, secret: bytes,
                  *, force: bool = False) -> tuple[Path, Path]:
    """Write ``<peer_id>.key`` and ``<peer_id>.key_secret`` (mode 0600); returns their paths.

    Refuses (RingError) to replace either file unless ``force``. Each file is
    written to a temporary name and renamed, so a reader never sees half a key
    and the secret is never, even briefly, readable by others.
    """
    _check_peer_id(peer_id)
    d = Path(directory)
    pub_path, sec_path = d / f"{peer_id}{PUBLIC_SUFFIX}", d / f"{peer_id}{SECRET_SUFFIX}"
    if not force:
        for p in (pub_path, sec_path):
            if p.exists():
                raise RingError(f"{p}: exists; not replaced (use --force to generate a new key pair)")
    pub_text, sec_text = public.decode("ascii"), secret.decode("ascii")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        d.mkdir(parents=True, exist_ok=True)
        _write_atomic(sec_path, _BANNER.format(now=now, kind="**Secret**", peer_id=peer_id, advice=_SECRET_ADVICE)
                      + f'    public-key = "{pub_text}"\n    secret-key = "{sec_text}"\n', 0o600)
        _write_atomic(pub_path, _public_text(peer_id, pub_text, now), 0o644)
    except OSError as exc:
        raise RingError(f"{d}: cannot write keys: {exc.strerror or exc}") from None
    return pub_path, sec_path


def _public_text(peer_id: str, pub_text: str, now: str) -> str:
    return (_BANNER.format(now=now, kind="Public", peer_id=peer_id, advice=_PUBLIC_ADVICE)
            + f'    public-key = "{pub_text}"\n')


def write_public(directory: str | Path, peer_id: str, public: bytes) -> Path:
    """Write ``<peer_id>.key`` alone (the public half of a pair whose secret is here); its path.

    Refuses (RingError) to replace an existing file.
    """
    _check_peer_id(peer_id)
    path = Path(directory) / f"{peer_id}{PUBLIC_SUFFIX}"
    if path.exists():
        raise RingError(f"{path}: exists; not replaced (use --force to generate a new key pair)")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        _write_atomic(path, _public_text(peer_id, public.decode("ascii"), now), 0o644)
    except OSError as exc:
        raise RingError(f"{directory}: cannot write keys: {exc.strerror or exc}") from None
    return path


def _write_atomic(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # O_CREAT's mode is masked by the umask; this is not
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True, slots=True)
class CurveKeys:
    """One peer's key pair and the keys directory it was loaded from.

    ``public``/``secret`` are Z85 (what zmq's ``CURVE_*KEY`` options take).
    The members' public keys are read from the directory when asked
    (:meth:`public_key`, :meth:`members`), so keys added later are seen.
    """

    directory: Path
    peer_id: str
    public: bytes
    secret: bytes = field(repr=False)

    @classmethod
    def load(cls, directory: str | Path, peer_id: str) -> CurveKeys:
        """Load ``peer_id``'s key pair and check every ``*.key`` of the directory.

        Raises RingError (one line) for a missing directory or file, a
        malformed key, a secret readable by others, or a pair whose halves
        disagree.
        """
        _check_peer_id(peer_id)
        d = Path(directory)
        if not d.is_dir():
            raise RingError(f"{d}: no such keys directory (generate keys with "
                            "python scripts/keys.py --ring cluster.toml; see docs/curve.md)")
        public, secret = read_secret(d / f"{peer_id}{SECRET_SUFFIX}")
        pub_file = d / f"{peer_id}{PUBLIC_SUFFIX}"
        if read_public(pub_file) != public:
            raise RingError(f"{pub_file}: does not match {peer_id}{SECRET_SUFFIX} (copy both halves "
                            "of the pair from where they were generated, or regenerate with --force)")
        keys = cls(directory=d, peer_id=peer_id, public=public, secret=secret)
        keys.members()  # a malformed member key is a startup error, not a silent refusal later
        return keys

    def public_key(self, peer_id: str) -> bytes:
        """The Z85 public key of ``peer_id`` (the server key a DEALER dialling it checks)."""
        _check_peer_id(peer_id)
        return read_public(self.directory / f"{peer_id}{PUBLIC_SUFFIX}")

    def members(self) -> Mapping[bytes, str]:
        """Every ``*.key`` of the directory now: Z85 public key -> peer id."""
        allowed: dict[bytes, str] = {}
        try:
            paths = sorted(self.directory.glob(f"*{PUBLIC_SUFFIX}"))
        except OSError as exc:
            raise RingError(f"{self.directory}: cannot list keys: {exc.strerror or exc}") from None
        for path in paths:
            allowed[read_public(path)] = path.name[: -len(PUBLIC_SUFFIX)]
        return MappingProxyType(allowed)

    def fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        """Names, sizes and mtimes of the ``*.key`` files: changes when a key is added or replaced."""
        out = []
        for path in sorted(self.directory.glob(f"*{PUBLIC_SUFFIX}")):
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((path.name, st.st_size, st.st_mtime_ns))
        return tuple(out)

    @staticmethod
    def local_ids(directory: str | Path) -> list[str]:
        """Peer ids whose secret key is in ``directory`` (the identities this machine can use)."""
        return sorted(p.name[: -len(SECRET_SUFFIX)] for p in Path(directory).glob(f"*{SECRET_SUFFIX}"))
