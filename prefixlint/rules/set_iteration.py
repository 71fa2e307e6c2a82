"""PFX402: iteration over a set or frozenset feeding a prompt or the tools list."""

from __future__ import annotations

from prefixlint.model.edits import Applicability
from prefixlint.model.layout import Nondeterminism
from prefixlint.rules._examples import HEADER, bad
from prefixlint.rules._nondeterminism import NondeterministicSerialization
from prefixlint.rules.base import Example

_TOOLS = (
    HEADER + 'SPECS = {"a": {"type": "function", "function": {"name": "a"}}, '
    '"b": {"type": "function", "function": {"name": "b"}}}\n\n\n'
    "def run(allowed: frozenset[str], messages):\n"
    "    tools = []\n"
    "    for name in {iter}:\n"
    "        tools.append(SPECS[name])\n"
    '    return client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)\n'
)
_JOIN = (
    HEADER + 'TOOL_NAMES = {{"lookup_employee", "list_pay_runs", "get_tax_form"}}\n\n\n'
    "def ask(q):\n"
    '    system = "You can call: " + ", ".join({iter}) + ". Always call a tool before answering a question '
    'about an employee, and never invent employee data."\n'
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{{"role": "system", '
    '"content": system}}, {{"role": "user", "content": q}}])\n'
)


class SetIteration(NondeterministicSerialization):
    """Iteration over a ``set`` or ``frozenset`` feeds the prompt or the tools list.

    String hashing is randomised per process (``PYTHONHASHSEED``), so the iteration order of a set
    of strings differs between processes and replicas. Tools or names listed in that order change
    the bytes of the prefix, and the cache misses.

    Fix (unsafe; safe when the set is a literal of strings): iterate in ``sorted(...)`` order.

    Fix safety: The fix is unsafe in general: ``sorted(...)`` yields the same elements, each once, in
    a fixed order instead of the hash order, but it raises ``TypeError`` on elements that do not
    compare with each other (``{1, "a"}``, or objects without an order), which the analysis cannot
    rule out for a set built at run time. It is marked safe when the set is a literal of string
    literals (or a name bound to one, or ``set(...)``/``frozenset(...)`` of one): then only the
    order of the listed tools or names changes.
    """

    code = "PFX402"
    name = "set-iteration"
    fix_applicability = Applicability.UNSAFE
    what = Nondeterminism.SET_ITERATION
    fix_purpose = "sorted"
    detail = "Iteration over a set, whose order changes between processes, builds this part"
    INVALID = [
        bad(
            _TOOLS.replace("{iter}", "allowed"),
            marker="for name",
            fixed=_TOOLS.replace("{iter}", "sorted(allowed)"),
            unsafe=True,
        ),
        bad(_JOIN.format(iter="TOOL_NAMES"), fixed=_JOIN.format(iter="sorted(TOOL_NAMES)")),
    ]
    VALID = [
        Example(_TOOLS.replace("{iter}", "sorted(allowed)")),
        Example(_JOIN.format(iter="sorted(TOOL_NAMES)")),
    ]
