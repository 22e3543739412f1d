"""The parameter types of the options: each checks a value before any work is done, from the
command line or from a TOML file (``train --config``), and refuses it with a usage error (exit
2) naming the option: not a number, not finite, out of its range."""

from __future__ import annotations

import math

import click

from ..core.errors import shorten


class Choice(click.Choice):
    """A choice that also takes the old names of its values (``--format table`` = text)."""

    def __init__(self, choices, aliases: dict[str, str] | None = None) -> None:
        super().__init__(choices)
        self.aliases = aliases or {}

    def convert(self, value, param, ctx):
        return super().convert(self.aliases.get(value, value), param, ctx)


class FiniteFloat(click.FloatRange):
    """A finite number (not inf, not nan) in a range: tolerances, steps, training settings.
    ``why``, when given, follows the refusal: what a value out of the range would do.

    >>> FiniteFloat(0, min_open=True).convert("0.5", None, None)
    0.5
    """

    def __init__(self, *args, why: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.why = why

    def convert(self, value, param, ctx):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail(f"{value!r} is not a number.", param, ctx)  # a TOML true, list, table
        if isinstance(value, str) and not value.isascii():  # float() takes '３' and '٣'
            self.fail(f"{value!r} is not a number: digits are ASCII (0-9).", param, ctx)
        try:
            float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number.", param, ctx)
        except OverflowError:
            pass
        try:
            number = super().convert(value, param, ctx)  # type: ignore[arg-type]
        except OverflowError:  # a whole number too large for a float (from a TOML file)
            self.fail(f"{shorten(str(value))} is not a finite number.", param, ctx)
        except click.BadParameter as e:
            self.fail(e.message.rstrip(".") + (f": {self.why}." if self.why else "."), param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class Whole(click.IntRange):
    """A whole number in a range, from the command line or a TOML file (not a bool, not 2.5).

    >>> Whole(1).convert("3", None, None)
    3
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.min is None and self.max is None:  # any whole number: shown as click's int
            self.name = "integer"

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value, param, ctx):
        if (
            isinstance(value, bool)
            or not isinstance(value, (str, int, float))
            or (isinstance(value, float) and not value.is_integer())
        ):
            self.fail(f"{value!r} is not a whole number.", param, ctx)
        if isinstance(value, str) and not (
            value.isascii() and value.strip().lstrip("+-").isdigit()
        ):
            self.fail(f"{value!r} is not a whole number.", param, ctx)  # 2.5, 1e3, abc
        return super().convert(value, param, ctx)  # type: ignore[arg-type]


#: A seed of NumPy's and Python's generators: a whole number, 0 or more.
SEED = Whole(0)


class Floats(click.ParamType):
    """``A,B``: ``count`` numbers, each of the type ``item`` (``--betas 0.9,0.999``); a list
    from a TOML file too.

    >>> Floats(2, FiniteFloat(0, 1)).convert("0.9,0.999", None, None)
    (0.9, 0.999)
    """

    def __init__(self, count: int, item: click.ParamType, metavar: str = "A,B") -> None:
        self.count, self.item, self.name = count, item, metavar

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        parts = value if isinstance(value, list) else str(value).strip("()[] ").split(",")
        if isinstance(value, (bool, int, float)) or len(parts) != self.count:
            self.fail(f"{self.count} numbers separated by commas, got {value!r}.", param, ctx)
        return tuple(self.item.convert(v, param, ctx) for v in parts)


class Interval(click.ParamType):
    """``LO,HI``: two finite numbers, LO < HI, whose distance is finite too."""

    name = "LO,HI"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            low, high = (float(v) for v in value.split(","))
        except ValueError:
            low = high = math.nan
        if not value.isascii():  # float() takes look-alike digits: '０,１'
            low = high = math.nan
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            self.fail(f"LO,HI must be two finite numbers with LO < HI, got {value!r}.", param, ctx)
        if not math.isfinite(high - low):
            self.fail(f"HI - LO must be a finite number too, got {value!r}.", param, ctx)
        return low, high


class FilePath(click.Path):
    """A file the command reads (``role`` "input"; "source": SOURCE and NAME=@FILE, whose
    words may be other things) or writes ("output"; "rows": a data file or a pattern of them).
    Each is claimed as click reads it, so an output that is the same file as an input or as
    another output is refused (exit 2) before anything runs."""

    def __init__(self, role: str, **kw) -> None:
        super().__init__(**kw)
        self.role = role

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        if ctx is not None and ctx.resilient_parsing or not isinstance(value, str):
            return value
        if value == "-" and self.role == "output" and not self.allow_dash:
            self.fail(  # not a file named "-" written in silence
                "'-' (standard output) cannot take this file: give it a name", param, ctx
            )
        from ..data.outputs import claim

        option = (param.opts or [param.human_readable_name])[0] if param is not None else "FILE"
        for path, role in named_files(value, self.role):
            claim(path, role, "SOURCE" if self.role == "source" else option)
        return value


def named_files(value: str, role: str) -> list[tuple[str, str]]:
    """The files a value names, each with its role.

    >>> named_files("W=@w.npy", "source"), named_files("-", "input"), named_files("sample:iris", "rows")
    ([('w.npy', 'input')], [], [])
    """
    if value == "-" or value.startswith("sample:"):
        return []
    if role == "source":
        name, equals, rest = value.partition("=")
        if equals:
            return [(rest[1:], "input")] if rest.startswith("@") else []
        return [(value, "input")]
    if role == "rows":
        import glob

        if glob.has_magic(value):
            return [(path, "input") for path in sorted(glob.glob(value))]
        return [(value, "input")]
    return [(value, role)]


class SliderRange(click.ParamType):
    """NAME=LO,HI: a slider's ends."""

    name = "range"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        import math

        name, _, ends = value.partition("=")
        try:
            lo, hi = (float(x) for x in ends.split(","))
        except ValueError:
            self.fail(f"{value!r} is not NAME=LO,HI (e=-3,3)", param, ctx)
        if not (name.isidentifier() and math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            self.fail(f"{value!r}: a name, then two finite numbers, the low one first", param, ctx)
        return name, (lo, hi)


RANGE = SliderRange()
