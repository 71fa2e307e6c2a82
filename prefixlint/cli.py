"""The ``prefixlint`` command line: mounts each command's typer app; the commands live in ``commands/``.

``check``, ``rules``, ``rule`` and ``diff`` are registered directly; ``engine``, ``bench``,
``canary`` and ``probe`` are mounted lazily, so a ``check`` never imports torch or httpx. Exit codes:
0 clean, 1 findings, 2 usage, configuration or internal error (see :mod:`prefixlint.commands.check`).
"""

import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from prefixlint import __version__
from prefixlint.commands.audit import audit
from prefixlint.commands.check import check
from prefixlint.commands.common import EXIT_ERROR, FAST_EXIT
from prefixlint.commands.diff import diff
from prefixlint.commands.lean import LeanCommand, install_lean_coercion
from prefixlint.commands.rules import rule, rules


class _Commands(MutableMapping[str, Any]):
    """The root group's commands, with the :data:`MOUNTS` sub-apps built on first access."""

    def __init__(self, commands: MutableMapping[str, Any], pending: list[str]) -> None:
        self._commands = dict(commands)
        self._pending = [n for n in pending if n not in self._commands]
        self._order = [*self._commands, *self._pending]

    def _load(self, name: str) -> None:
        self._pending.remove(name)
        group = _mounted_group(name)
        if group is not None:
            self._commands[name] = group

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


class LeanGroup(TyperGroup):
    """The top-level group: lean coercion for its own options, :data:`MOUNTS` built on demand."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands, list(MOUNTS))

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        install_lean_coercion(params)
        return params


app = typer.Typer(
    cls=LeanGroup,
    name="prefixlint",
    help="Make LLM prompts hit the provider's prefix cache.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"prefixlint {__version__}")
        raise typer.Exit(0)


app.command("check", cls=LeanCommand)(check)
app.command("rules", cls=LeanCommand)(rules)
app.command("rule", cls=LeanCommand)(rule)
app.command("diff", cls=LeanCommand)(diff)
app.command("audit")(audit)


# Sub-apps mounted under the root: (module with a typer ``app``, help). They are imported and built
# only when used (run, listed in help, completed, or suggested for a typo), so `check` skips them; one
# that fails to import is left out, as if it were not mounted. An ``app`` with a single command and
# no callback is mounted as that command (``prefixlint canary --base-url ...``), not as a group.
MOUNTS: dict[str, tuple[str, str]] = {
    "engine": ("prefixlint.commands.engine", "The reference prefix-caching inference engine."),
    "bench": (
        "prefixlint.commands.bench",
        "Prefix-cache TTFT and retention benchmarks against live endpoints.",
    ),
    "canary": ("prefixlint.commands.canary", "Cross-tenant leak gate against a live endpoint."),
    "probe": ("prefixlint.commands.probe", "Timing audit of prompt-cache sharing (Gu et al.)."),
}


def _mounted_group(name: str) -> Any:
    """The click group of mounted sub-app ``name``, as ``app.add_typer`` would have built it."""
    import importlib

    module, help_text = MOUNTS[name]
    try:
        sub = importlib.import_module(module).app
    except Exception:
        return None
    import typer.main

    if len(sub.registered_commands) == 1 and not sub.registered_groups and sub.registered_callback is None:
        command = typer.main.get_command(sub)
        command.name, command.short_help = name, help_text
        return command
    holder = typer.Typer(
        rich_markup_mode=app.rich_markup_mode,
        suggest_commands=app.suggest_commands,
        pretty_exceptions_short=app.pretty_exceptions_short,
    )
    holder.add_typer(sub, name=name, help=help_text)
    return typer.main.get_group(holder).commands[name]


def _is_process_entry() -> bool:
    """True when ``main`` runs as the program (console script or ``python -m prefixlint``)."""
    entry = sys.modules.get("__main__")
    spec = getattr(entry, "__spec__", None)
    if spec is not None and spec.name == "prefixlint.__main__":
        return True
    import os

    name = os.path.basename(getattr(entry, "__file__", None) or "")
    return name.removesuffix(".exe") in ("prefixlint", "prefixlint-script.py")


def _hard_exit(code: int) -> None:
    """Flush and leave without tearing the interpreter down (as mypy does): about 0.07 s saved.

    Only after ``check`` (its worker pool is already shut down) and only when this process is the
    command itself, never when ``main`` is called from other code.
    """
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        logging = sys.modules.get("logging")  # never imported: no handlers to flush
        if logging is not None:
            logging.shutdown()
    except Exception:
        return  # let the normal exit report it
    os._exit(code)


def main() -> None:
    """Console-script entry point: never a traceback, exit 2 on an internal error."""
    try:
        app()
    except SystemExit as exc:
        if FAST_EXIT and isinstance(exc.code, int) and _is_process_entry():
            _hard_exit(exc.code)
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        typer.echo(f"prefixlint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
