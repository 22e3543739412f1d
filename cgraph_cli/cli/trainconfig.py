"""``train --config FILE.toml``: options from the file's [train] table, each checked by its
option's type as the command line's are; a key of the wrong type is a usage error naming the
file, the line and the key."""

from __future__ import annotations

import click


def with_config(ctx: click.Context, options: dict) -> dict:
    """Options from --config's [train] table where the command line left the default, each
    checked as its option checks the command line's (a key of the wrong type is exit 2)."""
    path = options.pop("config")
    if path is None:
        return options
    from ..app.checks_spec import read_toml
    from ..core.errors import UsageError

    table = read_toml(path).get("train")
    if not isinstance(table, dict):
        raise UsageError(f"{path} has no [train] table")
    renames = {"output": "weights", "log": "log_file", "format": "fmt", "rows": "rows_file"}
    params = {p.name: p for p in ctx.command.params}
    for key, value in table.items():
        name = renames.get(key.replace("-", "_"), key.replace("-", "_"))
        if name not in options or name in ("args", "expr", "file_", "binds", "bindings_file"):
            raise UsageError(
                f"{path}: [train] has an unknown option {key!r}",
                hints=["the options of cgraph train, without dashes: lr, optimizer, epochs..."],
            )
        source = ctx.get_parameter_source(name)
        if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            options[name] = _config_value(ctx, params[name], path, key, value)
    return options


def _config_value(ctx: click.Context, param: click.Parameter, path: str, key: str, value):
    """A [train] value converted by its option's type, or a :class:`UsageError` naming the
    file, the key and its line."""
    from ..core.errors import UsageError

    kind = {bool: "true or false", str: "a string"}
    want: type
    try:
        if isinstance(param, click.Option) and param.is_flag:
            want = bool
        elif param.multiple:  # --wrt: "w,b" or ["w", "b"]
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return tuple(value)
            want = str
        elif isinstance(param.type, (click.types.StringParamType, click.Path, click.Choice)):
            want = str
        else:
            return param.type.convert(value, param, ctx)
        if not isinstance(value, want):
            raise click.BadParameter(f"{kind[want]}, not {_toml_type(value)}")
        if want is str and not param.multiple:
            return param.type.convert(value, param, ctx)
        return (value,) if param.multiple else value
    except click.BadParameter as e:
        place = _key_place(path, key)
        flag = max(param.opts, key=len)
        raise UsageError(
            f"{'' if place else path + ': '}[train] {key}: {e.message}",
            *place,
            hints=[f"it takes what {flag} takes on the command line"],
        ) from None


def _toml_type(value) -> str:
    """What a TOML value is, in words: a number, a list, a table..."""
    for kind, words in (
        (bool, "true/false"),
        (dict, "a table"),
        (list, "a list"),
        (str, "a string"),
    ):
        if isinstance(value, kind):
            return words
    return f"the number {value!r}" if isinstance(value, (int, float)) else type(value).__name__


def _key_place(path: str, key: str) -> tuple:
    """The span of ``key = `` in the [train] table of the TOML file ``path``, and its source
    (for the caret), or nothing when it cannot be found."""
    import re

    from ..core.errors import Source, Span

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return ()
    table = re.search(r"^[ \t]*\[[ \t]*train[ \t]*\]", text, re.M)
    if table is None:
        return ()
    found = re.compile(rf"^[ \t]*(['\"]?){re.escape(key)}\1[ \t]*=", re.M).search(text, table.end())
    if found is None:
        return ()
    start = found.start() + len(found.group()) - len(found.group().lstrip())
    return Span(start, start + len(found.group().strip().rstrip("=").rstrip())), Source(text, path)
