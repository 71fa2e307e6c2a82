"""Project classes derived from a framework sink (``subclass_sinks.py``): calling one sends its
``template=`` like the framework class would, through bases in this module or imported, and through
a conditional choice of class; a class whose ``__init__`` takes no ``**kwargs`` is not followed.
The real ``prefixlint check`` runs once on a small fresh project (issue 16: broad behaviour coverage
for mutation testing).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.test_prompts_messages import NOW, findings

pytestmark = needs_analyzer

BASES = (
    "from lagent.agents import AgentForInternLM\n\n\n"
    "class Helper(AgentForInternLM):\n    def __init__(self, **kwargs):\n"
    "        super().__init__(**kwargs)\n\n\n"
    "class Deeper(Helper):\n    pass\n\n\n"
    "class Closed(AgentForInternLM):\n    def __init__(self, llm):\n"
    "        super().__init__(llm=llm, template='x')\n"
)


def test_classes_derived_from_a_framework_sink(tmp_path: Path) -> None:
    """The timestamp ahead of the rules in ``template=`` is found where a sink class is reached."""
    call = f"(llm=llm, template={NOW} + RULES)\n"
    modules = {
        "plain/__init__.py": "",
        "plain/bases.py": BASES,
        "local_base.py": BASES + "\n\ndef agent(llm):\n    return Helper" + call,
        "imported.py": "from plain.bases import Deeper\n\n\ndef agent(llm):\n    return Deeper" + call,
        "either.py": (
            "from plain.bases import Closed, Helper\n\n\n"
            "def agent(llm, fancy):\n    return (Helper if fancy else Closed)" + call
        ),
        "closed.py": "from plain.bases import Closed\n\n\ndef agent(llm):\n    return Closed" + call,
        "module_alias.py": ("import plain.bases as bases\n\n\ndef agent(llm):\n    return bases" + call),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "either.py", 12, 67),
        ("PFX101", "imported.py", 12, 44),
        ("PFX101", "local_base.py", 26, 44),
    ]
