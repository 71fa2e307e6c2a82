"""``json.dumps`` in a prompt (``analysis/python/evaluate.py``, ``_json_dumps``/``_literal``): a dict
whose key order is not fixed in the source may serialize differently (PFX401), unless the keys are
sorted; a literal written out in the source (here, in a local, or imported) keeps its order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import needs_analyzer
from tests.test_flow_expressions import found, row

pytestmark = needs_analyzer

BODY = """
    import json
    from desk.schemas import OTHER
    SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
    STRIPPED = {"text": " x ".strip(), "n": -1, "none": None}
    def ask(q, payload):
        PRE
        system = "Schema: " + DUMPS + "\\n" + RULES
        return @SEND@
    """
FILES = {"desk/__init__.py": "", "desk/schemas.py": "OTHER = {'type': 'object', 'required': ['a']}\n"}


@pytest.mark.parametrize(
    ("dumps", "pre"),
    [
        ("json.dumps(SCHEMA)", "pass"),
        ("json.dumps(OTHER)", "pass"),
        ("json.dumps(STRIPPED)", "pass"),
        ("json.dumps(payload, sort_keys=True)", "pass"),
        ("json.dumps(local)", "local = {'a': 1, 'b': [1, -2, 'x', None]}"),
        ("json.dumps(local)", "local = payload\n        local = {'b': 2}"),
        ("json.dumps(sorted({'b', 'a'}))", "pass"),
        ("json.dumps(tags)", "tags = sorted({'b', 'a'})"),
    ],
)
def test_json_of_a_literal_or_with_sorted_keys_is_stable(tmp_path: Path, dumps: str, pre: str) -> None:
    assert found(tmp_path, BODY.replace("DUMPS", dumps).replace("PRE", pre), FILES) == []


@pytest.mark.parametrize(
    ("dumps", "snippet"),
    [("json.dumps(payload)", "payload"), ("json.dumps(dict(a=1, b=2))", "dict(a=1, b=2)")],
)
def test_json_of_a_dict_built_at_run_time_is_reported(tmp_path: Path, dumps: str, snippet: str) -> None:
    got = found(tmp_path, BODY.replace("DUMPS", dumps).replace("PRE", "pass"), FILES)
    assert [(f["code"], f["location"]["row"], f["location"]["column"], f["snippet"]) for f in got] == [
        ("PFX401", row(8), 27, snippet)
    ]
