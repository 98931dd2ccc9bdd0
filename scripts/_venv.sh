# Sourced by scripts/demo and scripts/test: make sure .venv exists and holds
# this checkout's ringcrawl with its test and demo extras. Reinstalls only when
# pyproject.toml changed (its hash is kept in .venv/.ringcrawl-installed), so a
# second run starts in well under a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="test"

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "ringcrawl needs Python 3.11 or newer; set PYTHON=/path/to/python3.11 and retry" >&2
    return 1
}

ensure_venv() {
    local python stamp want
    if [ ! -x "$VENV/bin/python" ]; then
        python="$(find_python)"
        echo "==> creating $VENV with $python" >&2
        "$python" -m venv "$VENV"
    fi
    stamp="$VENV/.ringcrawl-installed"
    want="$(cd "$ROOT" && sha256sum pyproject.toml | cut -d' ' -f1) [$EXTRAS]"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "==> installing ringcrawl[$EXTRAS] into .venv (pyproject.toml changed or first run)" >&2
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[$EXTRAS]"
        echo "$want" > "$stamp"
    fi
}

ensure_venv
PY="$VENV/bin/python"
cd "$ROOT"
