"""Print the README's config reference table from peer.core.config's own fields.

    python scripts/config_reference.py > /tmp/ref.md

tests/test_config.py checks that README.md carries every row this prints, so
after adding or changing a key, paste the output into the README.
"""

from peer.core.config import reference


def main() -> None:
    print("| key | type | default | meaning |")
    print("|---|---|---|---|")
    for key, kind, default, doc in reference():
        print(f"| `{key}` | {kind} | `{default}` | {doc} |")


if __name__ == "__main__":
    main()
