"""``python -m cgraph_cli``: the same as the ``cgraph`` command."""

from .cli import run

if __name__ == "__main__":
    run()
