"""What a request sends, read from the sink call's arguments (``builder.py``, ``sinks.py``).

``**params`` from a dict, the system prompt of Anthropic and the Responses API, a legacy
``prompt=``, text a framework sends right after the system prompt (a catalog ``system_follows``
path), the model named with a provider prefix, and a per-user ``prompt_cache_key``: each module's
finding is compared with its code, place and the cache minimum of the model it names. Each test
runs the real ``prefixlint check`` once on a small fresh project (issue 16: broad behaviour coverage
for mutation testing).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke, needs_analyzer
from tests.test_prompts_messages import HEAD, NOW

pytestmark = needs_analyzer

SYS_MSGS = f"[{{'role': 'system', 'content': {NOW} + RULES}}, {{'role': 'user', 'content': q}}]"


def found(root: Path, modules: dict[str, str]) -> list[tuple[str, str, int, int, int]]:
    """(code, file, line, column, cache minimum of the model) of each finding, sorted."""
    for name, body in modules.items():
        (root / name).write_text(HEAD + body, encoding="utf-8")
    code, out, err = invoke(["check", "--no-cache", "-j", "1", "--output-format", "json", "."], root)
    assert code in (0, 1), err
    return sorted(
        (f["code"], f["filename"], f["location"]["row"], f["location"]["column"], f["impact"]["minimum"])
        for f in json.loads(out)
    )


def test_request_arguments(tmp_path: Path) -> None:
    """The timestamp ahead of the rules is found in each way a request carries its prompt."""
    modules = {
        "params_local.py": (
            f"def ask(q):\n    params = {{'model': 'gpt-4o', 'messages': {SYS_MSGS}}}\n"
            "    return client.chat.completions.create(**params)\n"
        ),
        "params_literal.py": (
            "def ask(q):\n    return client.chat.completions.create("
            f"**{{'model': 'gpt-4o', 'messages': {SYS_MSGS}}})\n"
        ),
        "anthropic_system.py": (
            "import anthropic\n\n\ndef ask(q):\n    return anthropic.Anthropic().messages.create(\n"
            f"        model='claude-3-5-haiku-latest', max_tokens=100, system={NOW} + RULES,\n"
            "        messages=[{'role': 'user', 'content': q}],\n    )\n"
        ),
        "responses.py": (
            "def ask(q):\n    return client.responses.create("
            f"model='gpt-4o', instructions={NOW} + RULES, input=q)\n"
        ),
        "legacy.py": (
            "def ask(q):\n    return client.completions.create("
            f"model='gpt-3.5-turbo-instruct', prompt={NOW} + RULES)\n"
        ),
        "litellm_prefixed.py": (
            "import litellm\n\n\ndef ask(q):\n"
            f"    return litellm.completion(model='anthropic/claude-3-5-haiku-latest', messages={SYS_MSGS})\n"
        ),
        "lagent_follows.py": (
            "from lagent.agents import AgentForInternLM\nfrom lagent.prompts import InterpreterParser\n\n\n"
            "def agent(llm):\n    return AgentForInternLM(\n        llm, template=RULES,\n"
            f"        output_format=InterpreterParser(template={NOW} + RULES),\n    )\n"
        ),
        "lagent_dict.py": (
            "from lagent.agents import AgentForInternLM\n\n\n"
            "def agent(llm):\n    return AgentForInternLM(\n        llm, template=RULES,\n"
            f"        output_format=dict(template={NOW} + RULES),\n    )\n"
        ),
        "litellm_positional.py": (
            f"import litellm\n\n\ndef ask(q):\n    return litellm.completion('gpt-4o', {SYS_MSGS})\n"
        ),
        "cache_key.py": (
            "def ask(q, user_id):\n    return client.chat.completions.create(model='gpt-4o', "
            "messages=[{'role': 'system', 'content': RULES}, {'role': 'user', 'content': q}], "
            "prompt_cache_key=f'user-{user_id}')\n"
        ),
    }
    # a Claude Haiku model (named directly, or behind LiteLLM's provider prefix) caches from 2048
    # tokens; the per-user cache key with a short static prefix is no finding of its own
    assert found(tmp_path, modules) == [
        ("PFX101", "anthropic_system.py", 13, 72, 2048),
        ("PFX101", "lagent_dict.py", 14, 44, 1024),
        ("PFX101", "lagent_follows.py", 15, 57, 1024),
        ("PFX101", "legacy.py", 9, 84, 1024),
        ("PFX101", "litellm_positional.py", 12, 79, 1024),
        ("PFX101", "litellm_prefixed.py", 12, 121, 2048),
        ("PFX101", "params_literal.py", 9, 115, 1024),
        ("PFX101", "params_local.py", 9, 84, 1024),
        ("PFX101", "responses.py", 9, 72, 1024),
    ]
