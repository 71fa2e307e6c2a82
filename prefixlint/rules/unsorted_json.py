"""PFX401: ``json.dumps`` without ``sort_keys`` feeding a prompt, tools or a schema."""

from __future__ import annotations

from prefixlint.model.edits import Applicability
from prefixlint.model.layout import Nondeterminism
from prefixlint.rules._examples import HEADER, bad
from prefixlint.rules._nondeterminism import NondeterministicSerialization
from prefixlint.rules.base import Example

_TEMPLATE = (
    "import json\n" + HEADER + "\n\n"
    "def ask(q, profile: dict):\n"
    '    system = "Customer profile:\\n" + json.dumps(profile{extra}) + '
    '"\\nAnswer questions about the account. "'
    ' "Never reveal internal notes. Keep answers short and precise."\n'
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{{"role": "system", '
    '"content": system}}, {{"role": "user", "content": q}}])\n'
)


class UnsortedJson(NondeterministicSerialization):
    """``json.dumps`` without ``sort_keys=True`` feeds the prompt, the tools or a schema.

    Dicts that round-trip through a store, a cache or another process may come back with their
    keys in another order. The serialized bytes then differ for the same logical request, and the
    cache misses from that point on. JSON after a value computed per request (the user's question,
    retrieved data) is not reported: those bytes never reach a prefix two requests share, so their
    key order costs nothing more (the value ahead of them has its own finding).

    Fix (unsafe; safe for the output of ``json.loads``): add ``sort_keys=True``.

    Fix safety: The fix is unsafe in general: ``sort_keys=True`` changes only the order of the keys
    in the JSON text, and the data read back from it is the same, but ``json.dumps`` then raises
    ``TypeError`` on a dict, at any depth, whose keys do not compare with each other
    (``{1: 'a', 'b': 2}``), which the analysis cannot rule out for a dict built at run time. It is
    marked safe when the value is ``json.loads(...)``, whose keys are all strings.
    """

    code = "PFX401"
    name = "unsorted-json"
    fix_applicability = Applicability.UNSAFE
    what = Nondeterminism.UNSORTED_JSON
    fix_purpose = "sort-keys"
    detail = "`json.dumps` without `sort_keys=True` serializes data whose key order may change"
    INVALID = [
        bad(_TEMPLATE.format(extra=""), fixed=_TEMPLATE.format(extra=", sort_keys=True"), unsafe=True),
        bad(
            _TEMPLATE.format(extra=", indent=2"),
            fixed=_TEMPLATE.format(extra=", indent=2, sort_keys=True"),
            unsafe=True,
        ),
    ]
    VALID = [
        Example(_TEMPLATE.format(extra=", sort_keys=True")),
        Example(
            _TEMPLATE.replace("json.dumps(profile{extra})", 'json.dumps({{"plan": "pro"}})').format(),
            note="a literal dict has a fixed key order",
        ),
        Example(
            _TEMPLATE.replace("json.dumps(profile{extra})", 'json.dumps(sorted({{"pro", "team"}}))').format(),
            note="sorted strings have a fixed order, even when they come from a set",
        ),
    ]
