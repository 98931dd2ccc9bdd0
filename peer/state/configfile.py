"""Read cluster.toml from disk: the one file read behind ``peer.core.config.cluster.parse_config``.

Every way a read can fail (no file, a directory, not UTF-8, no permission)
is a ``ConfigError`` naming the file, which the command line prints as one
line with exit 2.
"""

from __future__ import annotations

from pathlib import Path

from peer.core.config.cluster import ClusterConfig, parse_config
from peer.errors import ConfigError

__all__ = ["load_config"]


def load_config(path: str | Path) -> ClusterConfig:
    """Read and validate cluster.toml; raises ConfigError with one clear line."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), "", "no such file (pass --ring PATH to a cluster.toml)") from None
    except IsADirectoryError:
        raise ConfigError(str(p), "", "is a directory, expected a cluster.toml file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(str(p), "", f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(str(p), "", f"cannot be read: {exc.strerror or exc}") from None
    cfg = parse_config(text, p, base=p.parent.resolve())
    seeds_file = cfg.crawl.seeds_file
    if seeds_file:
        f = Path(seeds_file)
        if not f.is_file():
            raise ConfigError(str(p), "crawl.seeds_file", f"expected a readable file, got {seeds_file!r} "
                              f"({'a directory' if f.is_dir() else 'no such file'})")
    return cfg
