"""``prefixlint check``'s fast path: its command line parsed before typer (and pydantic) is imported.

A one-file ``check``, as pre-commit runs it, must start in a fraction of a second; importing typer and
coercing option values through pydantic costs about 0.2 s of that. :func:`parse_check_args` reads the
same options as the typer command in :mod:`prefixlint.commands.check`, the way click's parser does
(long options with ``=`` or a separate value, clusters of short flags, ``-j2``, ``--``, repeated
options, environment variables), and converts the plain values it is sure of. Anything else (``--help``,
an unknown option, a missing value, a number it does not read as pydantic would) returns None, and the
caller hands the command line to typer, which accepts, rejects and words errors as it always does.
``tests/test_cli_fast_path.py`` checks that both give the same values for every command line it tries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Opt:
    """One option of ``check``: its destination, names, kind, default and environment variable."""

    dest: str
    opts: tuple[str, ...]
    kind: str  # flag | str | int | path | list
    default: Any = None
    secondary: tuple[str, ...] = ()  # ``--no-fix``: sets the flag to False
    envvar: str | None = None
    min: int | None = None

    @property
    def takes_value(self) -> bool:
        return self.kind != "flag"


# Kept equal to the typer signature of ``prefixlint.commands.check.check`` (a test compares them).
CHECK_OPTIONS: tuple[Opt, ...] = (
    Opt("output_format", ("--output-format",), "str", "text", envvar="PREFIXLINT_OUTPUT_FORMAT"),
    Opt("output_file", ("-o", "--output-file"), "path"),
    Opt("config", ("--config",), "path"),
    Opt("select", ("--select",), "list"),
    Opt("extend_select", ("--extend-select",), "list"),
    Opt("ignore", ("--ignore",), "list"),
    Opt("provider", ("--provider",), "str"),
    Opt("model", ("--model",), "str"),
    Opt("fix", ("--fix",), "flag", False, secondary=("--no-fix",)),
    Opt("unsafe_fixes", ("--unsafe-fixes",), "flag", False),
    Opt("diff", ("--diff",), "flag", False),
    Opt("show_fixes", ("--show-fixes",), "flag", False),
    Opt("add_ignore", ("--add-ignore",), "flag", False),
    Opt("changed_since", ("--changed-since",), "str"),
    Opt("statistics", ("--statistics",), "flag", False),
    Opt("exit_zero", ("--exit-zero",), "flag", False),
    Opt("no_cache", ("-n", "--no-cache"), "flag", False),
    Opt("cache_dir", ("--cache-dir",), "path", envvar="PREFIXLINT_CACHE_DIR"),
    Opt("jobs", ("-j", "--jobs"), "int", min=1),
    Opt("stdin_filename", ("--stdin-filename",), "str"),
    Opt("force_exclude", ("--force-exclude",), "flag", False),
    Opt("no_prefilter", ("--no-prefilter",), "flag", False),
    Opt("quiet", ("-q", "--quiet"), "flag", False),
    Opt("payload_shape", ("--payload-shape",), "str"),
    Opt("min_impact_tokens", ("--min-impact-tokens",), "int", min=0),
)


class _Unsure(Exception):
    """Leave this command line to typer."""


def _index() -> tuple[dict[str, tuple[Opt, bool]], dict[str, tuple[Opt, bool]]]:
    long: dict[str, tuple[Opt, bool]] = {}
    short: dict[str, tuple[Opt, bool]] = {}
    for opt in CHECK_OPTIONS:
        for names, value in ((opt.opts, True), (opt.secondary, False)):
            for name in names:
                (short if len(name) == 2 and name[1] != "-" else long)[name] = (opt, value)
    return long, short


def parse_check_args(argv: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """``check``'s keyword arguments for ``argv`` (the words after ``check``), or None: ask typer."""
    try:
        return _parse(list(argv), environ)
    except _Unsure:
        return None


def _parse(rargs: list[str], environ: Mapping[str, str]) -> dict[str, Any]:
    long, short = _index()
    given: dict[str, Any] = {}
    positional: list[str] = []

    def store(opt: Opt, flag_value: bool, value: str | None) -> None:
        if opt.kind == "flag":
            given[opt.dest] = flag_value
        elif opt.kind == "list":
            given.setdefault(opt.dest, []).append(value)
        else:
            given[opt.dest] = value

    def take_value() -> str:
        if not rargs:
            raise _Unsure  # "Option '-j' requires an argument."
        return rargs.pop(0)

    while rargs:
        arg = rargs.pop(0)
        if arg == "--":
            positional.extend(rargs)
            break
        if arg[:1] != "-" or len(arg) == 1:
            positional.append(arg)  # click lets arguments and options mix
            continue
        name, explicit = arg.split("=", 1) if "=" in arg else (arg, None)
        if name in long:
            opt, flag_value = long[name]
            if opt.takes_value:
                if explicit is not None:
                    rargs.insert(0, explicit)
                store(opt, flag_value, take_value())
            elif explicit is not None:
                raise _Unsure  # "Option '--fix' does not take a value."
            else:
                store(opt, flag_value, None)
            continue
        if arg[:2] == "--":
            raise _Unsure  # unknown long option, or --help
        for i, ch in enumerate(arg[1:], start=2):  # a cluster of short options: -nq, -j2, -oout.json
            if f"-{ch}" not in short:
                raise _Unsure
            opt, flag_value = short[f"-{ch}"]
            if opt.takes_value:
                if i < len(arg):
                    rargs.insert(0, arg[i:])
                store(opt, flag_value, take_value())
                break
            store(opt, flag_value, None)
    out: dict[str, Any] = {"paths": positional or None}
    for opt in CHECK_OPTIONS:
        if opt.dest in given:
            raw = given[opt.dest]
        elif opt.envvar and environ.get(opt.envvar):
            raw = [environ[opt.envvar]] if opt.kind == "list" else environ[opt.envvar]
        else:
            out[opt.dest] = opt.default
            continue
        out[opt.dest] = _convert(opt, raw)
    return out


def _convert(opt: Opt, raw: Any) -> Any:
    """``raw`` as typer would coerce it for ``opt``, when that is certain; else :class:`_Unsure`."""
    if opt.kind in ("flag", "str"):
        return raw
    if opt.kind == "list":
        return list(raw)
    if opt.kind == "int":
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
            raise _Unsure  # signs, spaces, underscores, other digits: pydantic's rules
        number = int(raw)
        if opt.min is not None and number < opt.min:
            raise _Unsure  # typer words the range error
        return number
    if opt.kind == "path":
        if not raw or "\x00" in raw:
            raise _Unsure
        return Path(raw)
    raise _Unsure  # pragma: no cover - every kind is handled above
