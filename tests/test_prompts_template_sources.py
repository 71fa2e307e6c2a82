"""Where a filled template's text comes from (``templating.py``, ``pieces.py``), seen in findings.

Each module fills a template with ``datetime.now()`` and sends it; the finding is reported on the
``{today}`` placeholder, in the literal or the file that holds it, at its exact line and column:
literals joined over several lines (with escapes, triple quotes, f-string constants), names,
attributes and imports, ``or`` defaults, prompt files read through paths built many ways, keys of
YAML and TOML files, and ``.replace`` chains. Each test runs the real ``prefixlint check`` once on a
small fresh project (issue 16: broad behaviour coverage for mutation testing).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.test_prompts_messages import RULES, findings, send

pytestmark = needs_analyzer

SYSTEM = send("[{'role': 'system', 'content': system}, {'role': 'user', 'content': q}]")
FILL = "    system = TEMPLATE.format(today=datetime.now())\n"


def fills(template: str, setup: str = "") -> str:
    """A module that sets ``TEMPLATE = template`` (after ``setup``), fills it and sends it."""
    return f"{setup}TEMPLATE = {template}\n\n\ndef ask(q):\n{FILL}{SYSTEM}"


def test_templates_joined_from_literals(tmp_path: Path) -> None:
    """Adjacent literals on several lines, escapes written on one line, a triple-quoted piece, an
    f-string of a constant, a literal continued with a backslash: each placeholder keeps its place."""
    modules = {
        "escapes.py": fills(
            '(\n    "You help with billing.\\n\\n"\n    "Now:\\t{today}.\\n"\n    f"{RULES}"\n)'
        ),
        "triple.py": fills(
            '(\n    "You help with billing.\\n"\n    """Note.\nToday is {today}.\n"""\n    f"{RULES}"\n)'
        ),
        "fconst.py": fills(
            '(\n    f"{HEAD}"\n    "Today is {today}.\\n"\n    f"{RULES}"\n)', 'HEAD = "Billing.\\n"\n'
        ),
        "continued.py": fills('(\n    "\\\nToday is {today}.\\n"\n    f"{RULES}"\n)'),
        "one_literal.py": fills('"\\\nToday is {today}.\\n" + RULES'),
        # not a template of constants: an f-string of a parameter or with a format spec
        "fspec.py": fills('(\n    "Today is {today}.\\n"\n    f"{RULES:>10}"\n)'),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "continued.py", 10, 10),
        ("PFX101", "escapes.py", 10, 12),
        ("PFX101", "fconst.py", 11, 15),
        ("PFX101", "one_literal.py", 9, 10),
        ("PFX101", "triple.py", 11, 10),
    ]


def test_templates_named_imported_or_defaulted(tmp_path: Path) -> None:
    """A template bound to a name, imported (module or name), an instance attribute set in
    ``__init__``, or the default of ``prompt or DEFAULT``."""
    text = f"'Today is {{today}}.\\n' + {RULES!r}"
    modules = {
        "plain/by_module.py": f"TEMPLATE = {text}\n",
        "plain/by_name.py": f"\nTEMPLATE = {text}\n",
        "module_attr.py": (
            "from plain import by_module\n\n\ndef ask(q):\n"
            "    system = by_module.TEMPLATE.format(today=datetime.now())\n" + SYSTEM
        ),
        "from_import.py": "from plain.by_name import TEMPLATE\n\n\ndef ask(q):\n" + FILL + SYSTEM,
        "self_attr.py": (
            "class Bot:\n    def __init__(self):\n"
            "        self.template = 'Today is {today}.\\n' + RULES\n\n"
            "    def ask(self, q):\n        system = self.template.format(today=datetime.now())\n"
            "    " + SYSTEM.replace("\n", "\n    ").rstrip() + "\n"
        ),
        "or_default.py": (
            f"DEFAULT = {text}\n\n\ndef ask(q, prompt=None):\n"
            "    system = (prompt or DEFAULT).format(today=datetime.now())\n" + SYSTEM
        ),
        "local.py": (
            f"def ask(q):\n    template = {text}\n"
            "    system = template.format(today=datetime.now())\n" + SYSTEM
        ),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "local.py", 9, 26),
        ("PFX101", "or_default.py", 8, 21),
        ("PFX101", "plain/by_module.py", 1, 22),
        ("PFX101", "plain/by_name.py", 2, 22),
        ("PFX101", "self_attr.py", 10, 35),
    ]


def test_template_files_read_through_paths(tmp_path: Path) -> None:
    """A prompt file read through a path built with ``/``, ``os.path.join``, ``joinpath``, string
    ``+``, ``importlib.resources``, ``open(...).read()``, a helper, or a key of a YAML or TOML file:
    the finding is on the placeholder's line and column in that file."""
    here = "HERE = Path(__file__).parent\n"
    reads = {
        "slash": "from pathlib import Path\n"
        + here
        + fills("(HERE / 'plain' / 'p' / 'slash.txt').read_text()"),
        "osjoin": "import os\n"
        + fills("open(os.path.join(os.path.dirname(__file__), 'plain', 'p', 'osjoin.txt')).read()"),
        "joinpath": "from pathlib import Path\n"
        + fills("Path(__file__).resolve().parent.joinpath('plain', 'p', 'joinpath.txt').read_text()"),
        "strplus": "from pathlib import Path\n"
        + fills("open(str(Path(__file__).parent) + '/plain/p/strplus.txt').read()"),
        "resources": "from importlib import resources\n"
        + fills("resources.files('plain').joinpath('p', 'resources.txt').read_text()"),
        "helper": "from pathlib import Path\n\n\ndef load(name):\n"
        "    return (Path(__file__).parent / 'plain' / 'p' / name).read_text()\n\n\n"
        + fills("load('helper.txt')"),
    }
    modules = {f"{name}.py": body for name, body in reads.items()}
    for i, name in enumerate(reads):
        modules[f"plain/p/{name}.txt"] = "Billing.\n" * i + f"You help.  Today is {{today}}.\n{RULES}\n"
    modules["plain/__init__.py"] = ""
    modules["plain/p/agent.yaml"] = (
        f"agent:\n  name: billing\n  system: |\n    Today is {{today}}.\n    {RULES}\n"
    )
    modules["plain/p/other.yaml"] = f"agent:\n  system: >\n     Now {{today}}.\n     {RULES}\n"
    modules["plain/p/agent.toml"] = f'[agent]\nsystem = """\nToday: {{today}}.\n{RULES}\n"""\n'
    yaml_path = "Path(__file__).parent / 'plain' / 'p'"
    modules["yaml_key.py"] = "import yaml\nfrom pathlib import Path\n" + fills(
        f"yaml.safe_load(({yaml_path} / 'agent.yaml').read_text())['agent']['system']"
    )
    modules["yaml_get.py"] = (
        "import yaml\nfrom pathlib import Path\n"
        f"CFG = yaml.safe_load(open({yaml_path} / 'other.yaml'))\n" + fills("CFG['agent'].get('system')")
    )
    modules["toml_key.py"] = "import tomllib\nfrom pathlib import Path\n" + fills(
        f"tomllib.loads(({yaml_path} / 'agent.toml').read_text())['agent']['system']"
    )
    # the i-th file has its placeholder on line i + 1
    assert findings(tmp_path, modules) == [
        ("PFX101", "plain/p/agent.toml", 3, 8),
        ("PFX101", "plain/p/agent.yaml", 4, 14),
        ("PFX101", "plain/p/helper.txt", 6, 21),
        ("PFX101", "plain/p/joinpath.txt", 3, 21),
        ("PFX101", "plain/p/osjoin.txt", 2, 21),
        ("PFX101", "plain/p/other.yaml", 3, 10),
        ("PFX101", "plain/p/resources.txt", 5, 21),
        ("PFX101", "plain/p/slash.txt", 1, 21),
        ("PFX101", "plain/p/strplus.txt", 4, 21),
    ]


def test_templates_filled_by_replace(tmp_path: Path) -> None:
    """``.replace("{today}", ...)`` chained or step by step on a known template, or of a marker
    that is no placeholder (``<<DATE>>``); a key the template does not hold, or a constant value,
    fills nothing."""
    text = f"'Intro.\\nToday is {{today}}.\\n' + {RULES!r}"
    marker = f"'Intro.\\nDate: <<DATE>>.\\n' + {RULES!r}"
    modules = {
        "chained.py": f"TEMPLATE = {text}\n\n\ndef ask(q):\n"
        "    system = TEMPLATE.replace('{today}', str(datetime.now())).replace('{x}', q)\n" + SYSTEM,
        "steps.py": f"TEMPLATE = {text}\n\n\ndef ask(q):\n"
        "    system = TEMPLATE.replace('{today}', str(datetime.now()))\n"
        "    system = system.replace('{none}', q)\n" + SYSTEM,
        "constant.py": f"TEMPLATE = {text}\n\n\ndef ask(q):\n"
        "    system = TEMPLATE.replace('{today}', 'Monday')\n" + SYSTEM,
        "missing.py": f"TEMPLATE = {text}\n\n\ndef ask(q):\n"
        "    system = TEMPLATE.replace('{other}', q)\n" + SYSTEM,
        "marker.py": f"TEMPLATE = {marker}\n\n\ndef ask(q):\n"
        "    system = TEMPLATE.replace('<<DATE>>', str(datetime.now()))\n" + SYSTEM,
    }
    # on ``{today}`` in the one-line literal (its ``\\n`` escapes are not line breaks)
    assert findings(tmp_path, modules) == [
        ("PFX101", "chained.py", 8, 30),
        ("PFX101", "marker.py", 8, 27),
        ("PFX101", "steps.py", 8, 30),
    ]


def test_templates_in_class_fields_and_loaded_documents(tmp_path: Path) -> None:
    """The default of a dataclass field reached through a settings object; a YAML document loaded
    in the function through ``with open(...) as f``, indexed by position, or read with ``.get``."""
    modules = {
        "fields.py": (
            "from dataclasses import dataclass, field\n\n\n@dataclass\nclass Prompts:\n"
            f"    answer: str = 'Today is {{today}}.\\n' + {RULES!r}\n\n\n"
            "@dataclass\nclass Settings:\n    prompts: Prompts = field(default_factory=Prompts)\n\n\n"
            "settings = Settings()\n\n\ndef ask(q):\n"
            "    system = settings.prompts.answer.format(today=datetime.now())\n" + SYSTEM
        ),
        "plain/__init__.py": "",
        "plain/agents.yaml": (
            f"agents:\n  - name: billing\n    system: |\n      Today is {{today}}.\n      {RULES}\n"
        ),
        "plain/other.yaml": f"system: |\n  Now: {{today}}.\n  {RULES}\n",
        "with_open.py": (
            "import yaml\nfrom pathlib import Path\n\n\ndef ask(q):\n"
            "    with open(Path(__file__).parent / 'plain' / 'agents.yaml') as f:\n"
            "        cfg = yaml.safe_load(f)\n"
            "    system = cfg['agents'][0]['system'].format(today=datetime.now())\n" + SYSTEM
        ),
        "get_default.py": (
            "import yaml\nfrom pathlib import Path\n\n\ndef ask(q):\n"
            "    cfg = yaml.safe_load((Path(__file__).parent / 'plain' / 'other.yaml').read_text())\n"
            "    system = cfg.get('system', '').format(today=datetime.now())\n" + SYSTEM
        ),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "fields.py", 13, 29),
        ("PFX101", "plain/agents.yaml", 4, 16),
        ("PFX101", "plain/other.yaml", 2, 8),
    ]
