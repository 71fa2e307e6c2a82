"""PFX403: a repr that carries a memory address (``<Foo object at 0x7f...>``, ``id(obj)``)."""

from __future__ import annotations

from prefixlint.model.layout import Nondeterminism
from prefixlint.rules._examples import HEADER, bad
from prefixlint.rules._nondeterminism import NondeterministicSerialization
from prefixlint.rules.base import Example

_CODE = (
    HEADER + "\n\n"
    "class Toolbox:\n"
    "    pass\n{extra}\n\n"
    "def ask(q):\n"
    "    box = Toolbox()\n"
    '    system = f"Tools: {{box!r}}\\nUse the tools to answer questions about payroll. '
    'Keep answers short and cite the help centre."\n'
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{{"role": "system", '
    '"content": system}}, {{"role": "user", "content": q}}])\n'
)


class MemoryAddressRepr(NondeterministicSerialization):
    """A ``repr``/``str`` that carries a memory address, or ``id(...)``, feeds the prompt.

    The default ``repr`` of an object is ``<Foo object at 0x7f3a...>``; the address differs on
    every run and usually on every request, so nothing after it is cached.
    ``f"{box}"`` is ``str(box)``, which falls back on that ``repr`` when the class defines neither
    ``__str__`` nor ``__format__``.

    Fix: give the class a ``__repr__`` that prints stable fields, or render the fields you need.

    Fix safety: There is no automatic fix: a stable ``__repr__`` depends on which fields identify
    the object, which only its author knows.
    """

    code = "PFX403"
    name = "memory-address-repr"
    what = Nondeterminism.MEMORY_ADDRESS
    detail = "A repr that includes a memory address (differs on every run)"
    INVALID = [bad(_CODE.format(extra="")), bad(_CODE.replace("{{box!r}}", "{{box}}").format(extra=""))]
    VALID = [Example(_CODE.format(extra='\n    def __repr__(self):\n        return "Toolbox()"\n'))]
