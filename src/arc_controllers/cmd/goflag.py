"""A command-line parser with the rules of Go's standard ``flag`` package.

ARC's Helm charts render arguments for a Go binary. A drop-in manager has to accept
exactly what those charts render and refuse what Go refuses, with the same exit
codes: ``-name`` and ``--name`` are the same flag; ``--name=value`` and ``--name value``
both work except for booleans; parsing stops at the first positional argument or
``--``; an unknown flag or a bad value is exit code 2; ``-h``/``--help`` is exit 0.

Ports: the parsing rules of Go's flag.FlagSet (flag.go), strconv.ParseBool,
strconv.ParseInt with base 0, and time.ParseDuration
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "FlagError",
    "FlagSet",
    "HelpRequested",
    "ParsedFlags",
    "format_go_duration",
    "parse_go_bool",
    "parse_go_duration",
    "parse_go_int",
]

FlagKind = Literal["bool", "string", "int", "duration", "list", "comma_list"]


class FlagError(ValueError):
    """A flag Go would refuse; ``str()`` is Go's one-line message. Exit code 2."""


class HelpRequested(Exception):
    """``-h``, ``-help`` or ``--help`` was given. Exit code 0."""


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_go_bool(text: str) -> bool:
    """Parse a boolean as Go's ``strconv.ParseBool`` does.

    Raises:
        ValueError: anything but 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False.

    Ports: strconv.ParseBool
    """
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"parse error: {text!r} is not a boolean")


_INT_RE = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)")


def parse_go_int(text: str) -> int:
    """Parse an integer with base auto-detection, as ``strconv.ParseInt(s, 0, 64)`` does.

    ``0x10``, ``0o17``, ``017`` (octal), ``0b11`` and ``1_000`` are accepted; underscores
    only between digits or after a base prefix.

    Raises:
        ValueError: not an integer, or outside the signed 64-bit range.

    Ports: strconv.ParseInt with base 0
    """
    if not _INT_RE.fullmatch(text):
        raise ValueError(f"parse error: {text!r} is not an integer")
    body = text.lstrip("+-")
    if "__" in body or body.endswith("_"):
        raise ValueError(f"parse error: {text!r} has a misplaced underscore")
    sign = -1 if text.startswith("-") else 1
    digits = body.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "xXoObB":
        value = int(digits, 0)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits[1:], 8)
    else:
        value = int(digits, 10)
    value *= sign
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"value out of range: {text!r}")
    return value


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Parse a Go duration ("1m", "30s", "1h2m", "1.5h", "0") into seconds.

    Raises:
        ValueError: not a Go duration (a unit is required except for "0").

    Ports: time.ParseDuration
    """
    rest = text
    sign = 1.0
    if rest[:1] in "+-" and rest:
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    while pos < len(rest):
        match = _DURATION_PART.match(rest, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * total


def format_go_duration(seconds: float) -> str:
    """``seconds`` as Go prints a ``time.Duration`` ("5m0s", "1h0m0s", "1.5s", "300ms", "0s").

    Rounded to whole nanoseconds, the resolution of a Go duration.

    Ports: time.Duration.String
    """
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _decimal(ns, size) + unit
    hours, rest = divmod(ns, 3_600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _decimal(value: int, unit: int) -> str:
    """``value / unit`` in decimal, trailing fractional zeros dropped (both whole numbers)."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + str(frac).rjust(digits, "0").rstrip("0")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedFlags:
    """The outcome of `FlagSet.parse`.

    Python only: Go keeps these on the FlagSet (Lookup, Visit, Args).
    """

    values: dict[str, Any]
    """Every declared flag's value by name."""

    given: frozenset[str]
    """Names of the flags present in argv (flag.Visit)."""

    rest: list[str]
    """Arguments after parsing stopped (flag.Args)."""


@dataclass(slots=True)
class _Flag:
    name: str
    kind: FlagKind
    default: Any
    usage: str


@dataclass(slots=True)
class FlagSet:
    """A set of Go-style flags; `parse` returns their values by name.

    Python only: the container for the rules ported in this module.
    """

    program: str
    _flags: dict[str, _Flag] = field(default_factory=dict)

    def add(self, name: str, kind: FlagKind, default: Any, usage: str) -> None:
        """Declare flag ``name`` of ``kind`` with its default value and help text.

        Python only: Go declares flags with typed helpers (flag.String, flag.Bool, ...).
        """
        if name in self._flags:
            raise ValueError(f"flag redefined: {name}")
        self._flags[name] = _Flag(name, kind, default, usage)

    def usage(self) -> str:
        """The usage text, one flag per entry, sorted by name. Ports: flag.PrintDefaults"""
        lines = [f"Usage of {self.program}:"]
        for flag in sorted(self._flags.values(), key=lambda f: f.name):
            kind = "" if flag.kind == "bool" else f" {flag.kind.replace('comma_list', 'list')}"
            lines.append(f"  -{flag.name}{kind}\n    \t{flag.usage}" + _default_note(flag))
        return "\n".join(lines)

    def parse(self, argv: Sequence[str]) -> ParsedFlags:
        """Parse ``argv`` (without the program name).

        Returns:
            Every declared flag's value (its default when absent; lists start empty and
            append per occurrence), the names given, and the arguments after parsing stopped.

        Raises:
            FlagError: an unknown flag, a missing or bad value, or bad flag syntax.
            HelpRequested: ``-h``, ``-help`` or ``--help`` was given (and not declared).

        Ports: flag.FlagSet.Parse and parseOne
        """
        values: dict[str, Any] = {
            f.name: (list(f.default) if f.kind in ("list", "comma_list") else f.default) for f in self._flags.values()
        }
        given: set[str] = set()
        args = list(argv)
        while args:
            arg = args[0]
            if len(arg) < 2 or arg[0] != "-":
                break
            args.pop(0)
            dashes = 2 if arg.startswith("--") else 1
            if dashes == 2 and len(arg) == 2:
                break
            body = arg[dashes:]
            if not body or body[0] in "-=":
                raise FlagError(f"bad flag syntax: {arg}")
            name, has_value, value = body.partition("=")
            flag = self._flags.get(name)
            if flag is None:
                if name in ("h", "help"):
                    raise HelpRequested
                raise FlagError(f"flag provided but not defined: -{name}")
            given.add(name)
            if flag.kind == "bool":
                if has_value:
                    values[name] = _convert(flag, value)
                else:
                    values[name] = True
                continue
            if not has_value:
                if not args:
                    raise FlagError(f"flag needs an argument: -{name}")
                value = args.pop(0)
            converted = _convert(flag, value)
            if flag.kind in ("list", "comma_list"):
                values[name].extend(converted)
            else:
                values[name] = converted
        return ParsedFlags(values=values, given=frozenset(given), rest=args)


def _convert(flag: _Flag, value: str) -> Any:
    parsers: dict[FlagKind, Callable[[str], Any]] = {
        "bool": parse_go_bool,
        "string": str,
        "int": parse_go_int,
        "duration": parse_go_duration,
        "list": lambda v: [v],
        "comma_list": lambda v: [item for item in v.split(",") if item],
    }
    try:
        return parsers[flag.kind](value)
    except ValueError as exc:
        raise FlagError(f'invalid value "{value}" for flag -{flag.name}: {exc}') from None


def _default_note(flag: _Flag) -> str:
    if flag.kind in ("list", "comma_list") or flag.default in ("", False, None, 0):
        return ""
    if flag.kind == "duration":
        return f" (default {format_go_duration(flag.default)})"
    return f' (default "{flag.default}")' if flag.kind == "string" else f" (default {flag.default})"
