"""The ``prefixlint`` command line: mounts each command's typer app; the commands live in ``commands/``.

``prefixlint check ...`` takes a fast path: :mod:`prefixlint.commands.lean` parses its options before
typer is imported, and :func:`prefixlint.commands.check_launch.launch_check` runs it (forking the
worker that analyses files before the check command itself is imported). Every other command
line (``--help``, other commands, a ``check`` line the fast path leaves to typer) goes to the typer
app, built on first use: ``check``, ``rules``, ``rule``, ``diff`` and ``audit`` are registered directly; the
:data:`MOUNTS` sub-apps are imported only when used, so a ``check`` never imports torch or httpx.

Exit codes: 0 clean, 1 findings, 2 usage, configuration or internal error. ``atexit`` handlers
always run, so ``coverage run -m prefixlint`` keeps its data. A ``check`` started from the command
line (:func:`entry`) then ends without tearing its objects down one by one, as mypy does: that
teardown was 15-25 ms of a 0.45 s one-file check.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

log = logging.getLogger("prefixlint.cli")

# Sub-apps mounted under the root: name -> (module with a typer ``app``, help). To add a command,
# add a line here. They are imported and built only when used (run, listed in help, completed, or
# suggested for a typo), so ``check`` skips them. One that fails to import is still listed, marked
# unavailable, and running it says which extra to install (see :func:`_unavailable`). An ``app``
# with a single command and no callback is mounted as that command (``prefixlint canary --base-url
# ...``), not as a group.
MOUNTS: dict[str, tuple[str, str]] = {
    "engine": ("prefixlint.commands.engine", "The reference prefix-caching inference engine."),
    "bench": (
        "prefixlint.commands.bench",
        "Prefix-cache TTFT and retention benchmarks against live endpoints.",
    ),
    "canary": ("prefixlint.commands.canary", "Cross-tenant leak gate against a live endpoint."),
    "probe": ("prefixlint.commands.probe", "Timing audit of prompt-cache sharing (Gu et al.)."),
}

_JSON_FORMATS = ("json", "json-lines", "sarif", "github")


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: never a traceback, exit 2 on an internal error."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _run(args)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        code = _internal_error(args, exc)
    sys.exit(code)


def entry() -> None:
    """The ``prefixlint`` console script and ``python -m prefixlint``: :func:`main`, and a ``check``
    ends at once (:func:`_leave`). Code that calls :func:`main` itself gets its ``SystemExit``."""
    try:
        main()
    except SystemExit as done:
        code = done.code
        if sys.argv[1:2] == ["check"] and isinstance(code, int):
            _leave(code)
        raise


def _leave(code: int) -> None:
    """End the process now, once ``atexit`` handlers have run and the output is flushed.

    Only where nothing else could be cut short: a single thread, no tracer or profiler (whose report
    is written after this function returns), and CPython's ``atexit`` runner at hand. Otherwise it
    returns, and the caller exits as usual.
    """
    import atexit
    import threading

    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None or threading.active_count() > 1 or sys.gettrace() or sys.getprofile():
        return
    run_handlers()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the normal exit would fail to flush it too
        return
    os._exit(code)


def _run(args: list[str]) -> int:
    if args[:1] == ["check"]:
        from prefixlint.commands.lean import parse_check_args

        kwargs = parse_check_args(args[1:], os.environ)
        if kwargs is not None:
            from prefixlint.commands.check_launch import launch_check

            return launch_check(kwargs)
    return _run_typer(args)


def _run_typer(args: list[str]) -> int:
    """Run the typer app; a ``check`` usage error also becomes a JSON report in the JSON formats."""
    fmt = requested_format(args) if args[:1] == ["check"] else "text"
    capture = _Tee(sys.stderr) if fmt in _JSON_FORMATS else None
    if capture is not None:
        sys.stderr = capture  # type: ignore[assignment]
    try:
        build_app()(args=args, prog_name="prefixlint")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    finally:
        if capture is not None:
            sys.stderr = capture.stream
    code = 0 if code is None else code if isinstance(code, int) else 1
    if capture is not None and code == 2 and not _check_reported():
        _json_error(fmt, _usage_message(capture.text()))
    return code


def _check_reported() -> bool:
    module = sys.modules.get("prefixlint.commands.check_run")
    return bool(module is not None and module.REPORTED)


def requested_format(args: Sequence[str], environ: MutableMapping[str, str] | None = None) -> str:
    """The ``--output-format`` a ``check`` command line asks for, read as click would (last one wins)."""
    env = os.environ if environ is None else environ
    fmt = env.get("PREFIXLINT_OUTPUT_FORMAT") or "text"
    words = list(args)
    for i, word in enumerate(words):
        if word == "--":
            break
        if word == "--output-format" and i + 1 < len(words):
            fmt = words[i + 1]
        elif word.startswith("--output-format="):
            fmt = word.split("=", 1)[1]
    return fmt


def _internal_error(args: list[str], exc: Exception) -> int:
    log.debug("internal error", exc_info=exc)
    message = f"internal error: {type(exc).__name__}: {exc}"
    print(f"prefixlint: {message}", file=sys.stderr)
    if args[:1] == ["check"]:
        fmt = requested_format(args)
        if fmt in _JSON_FORMATS:
            _json_error(fmt, message)
    return 2


def _json_error(fmt: str, message: str) -> None:
    from prefixlint.commands.check_run import report_error

    report_error(fmt, message)


class _Tee:
    """A stream that writes through to ``stream`` and remembers what was written."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return self.stream.write(text)

    def text(self) -> str:
        return "".join(self._parts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _usage_message(text: str) -> str:
    """click's or typer's (rich panel) usage error as one line."""
    import re

    lines = []
    for line in text.splitlines():
        plain = re.sub(r"\x1b\[[0-9;]*m", "", line)
        plain = re.sub(r"[│╭╮╰╯─]", " ", plain).strip()
        if not plain or plain.startswith(("Usage:", "Try '")) or plain == "Error":
            continue
        lines.append(plain.removeprefix("Error: "))
    return " ".join(" ".join(lines).split()) or "invalid command line"


# --- the typer app ------------------------------------------------------------------------------------

_APP: list[Any] = []


def build_app() -> Any:
    """The typer app (built once, on first use)."""
    if _APP:
        return _APP[0]
    import typer
    from typer.core import TyperGroup

    from prefixlint import __version__
    from prefixlint.commands.audit import audit
    from prefixlint.commands.check import check
    from prefixlint.commands.diff import diff
    from prefixlint.commands.rules import rule, rules

    class LazyGroup(TyperGroup):
        """The top-level group, with the :data:`MOUNTS` built on demand."""

        def __init__(self, **attrs: Any) -> None:
            super().__init__(**attrs)
            self.commands = _Commands(self.commands, list(MOUNTS))

    app = typer.Typer(
        cls=LazyGroup,
        name="prefixlint",
        help="Make LLM prompts hit the provider's prefix cache.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback(invoke_without_command=True)
    def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
        if version:
            typer.echo(f"prefixlint {__version__}")
            raise typer.Exit(0)

    app.command("check")(check)
    app.command("rules")(rules)
    app.command("rule")(rule)
    app.command("diff")(diff)
    app.command("audit")(audit)
    _APP.append(app)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from prefixlint.cli import app`` builds it
        return build_app()
    raise AttributeError(name)


class _Commands(MutableMapping[str, Any]):
    """The root group's commands, with the :data:`MOUNTS` sub-apps built on first access."""

    def __init__(self, commands: MutableMapping[str, Any], pending: list[str]) -> None:
        self._commands = dict(commands)
        self._pending = [n for n in pending if n not in self._commands]
        self._order = [*self._commands, *self._pending]

    def _load(self, name: str) -> None:
        self._pending.remove(name)
        self._commands[name] = _mounted_group(name)

    def __getitem__(self, name: str) -> Any:
        if name in self._pending:
            self._load(name)
        return self._commands[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name in self._pending:
            self._pending.remove(name)
        if name not in self._order:
            self._order.append(name)
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        if name in self._pending:
            self._pending.remove(name)
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        for name in list(self._pending):
            self._load(name)
        return iter([n for n in self._order if n in self._commands])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _mounted_group(name: str) -> Any:
    """The click group of mounted sub-app ``name``, as ``app.add_typer`` would have built it."""
    import importlib

    import typer
    import typer.main

    module, help_text = MOUNTS[name]
    try:
        sub = importlib.import_module(module).app
    except Exception as exc:  # a missing optional dependency, or a broken module: say so
        log.debug("cannot import %s for `prefixlint %s`", module, name, exc_info=exc)
        return _unavailable(name, help_text, exc)
    if len(sub.registered_commands) == 1 and not sub.registered_groups and sub.registered_callback is None:
        command = typer.main.get_command(sub)
        command.name, command.short_help = name, help_text
        return command
    app = build_app()
    holder = typer.Typer(
        rich_markup_mode=app.rich_markup_mode,
        suggest_commands=app.suggest_commands,
        pretty_exceptions_short=app.pretty_exceptions_short,
    )
    holder.add_typer(sub, name=name, help=help_text)
    return typer.main.get_group(holder).commands[name]


def _install_hint(name: str, exc: Exception) -> str:
    """``install prefixlint[engine]`` for a missing module an extra provides; else the error itself."""
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    extra = _extra_providing(missing) if missing else None
    if extra:
        return f"install prefixlint[{extra}] ({exc})"
    if isinstance(exc, ImportError):
        return f"a dependency is missing: {exc}; install the extra that `prefixlint {name}` needs"
    return f"it failed to load: {type(exc).__name__}: {exc}"


def _extra_providing(module: str) -> str | None:
    """The extra of the installed prefixlint that declares the distribution of top-level ``module``."""
    import re
    from importlib import metadata

    top = module.split(".")[0].lower().replace("_", "-")
    try:
        requires = metadata.requires("prefixlint") or []
    except metadata.PackageNotFoundError:
        return None
    for req in requires:
        m = re.match(r"\s*([A-Za-z0-9_.\-]+).*extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        if m and m.group(2) != "dev" and m.group(1).lower().replace("_", "-") == top:
            return m.group(2)
    return None


def _unavailable(name: str, help_text: str, exc: Exception) -> Any:
    """A stand-in command, listed in ``--help`` as unavailable, whose every use exits 2 with the hint."""
    from typer.core import TyperCommand

    hint = _install_hint(name, exc)

    def explain() -> None:
        print(f"prefixlint: error: `prefixlint {name}` is not available: {hint}", file=sys.stderr)
        sys.exit(2)

    from rich.markup import escape  # typer renders help as rich markup: keep "[engine]" as written

    return TyperCommand(
        name=name,
        callback=explain,
        help=escape(f"(unavailable: {hint}) {help_text}"),
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


if __name__ == "__main__":
    main()
