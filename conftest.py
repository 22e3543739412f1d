"""Collection for the whole checkout: without the lsp extra, the doctest collector leaves out
the one module that imports pygls (it has no doctests; tests/test_lsp.py skips)."""

from importlib.util import find_spec

collect_ignore = [] if find_spec("pygls") else ["cgraph_cli/app/lsp/server.py"]
