"""LangChain and LlamaIndex messages read through the plugins' message constructors
(``messages.message_item``), seen in the findings a user gets: message classes with the text by
keyword or position, a role given by keyword, prompt templates of each ``template_format``, and
history placeholders. Each test runs the real ``prefixlint check`` once on a small fresh project
(issue 16: broad behaviour coverage for mutation testing).
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import needs_analyzer
from tests.test_prompts_messages import NOW, findings

pytestmark = needs_analyzer

LC = "from langchain_core.messages import AIMessage, HumanMessage, SystemMessage\n\n\n"
ASK = "def ask(llm, q):\n    return llm.invoke("
PT = (
    "from langchain_core.prompts import (\n    ChatPromptTemplate,\n    MessagesPlaceholder,\n"
    "    PromptTemplate,\n    SystemMessagePromptTemplate,\n)\n\n\n"
)


def test_message_classes(tmp_path: Path) -> None:
    """The text of ``SystemMessage(content=...)`` or ``SystemMessage(...)``, a LlamaIndex
    ``ChatMessage(role=..., content=...)``, and an earlier ``AIMessage`` turn."""
    modules = {
        "keyword.py": LC + ASK + f"[SystemMessage(content={NOW} + RULES), HumanMessage(q)])\n",
        "positional.py": LC + ASK + f"[SystemMessage({NOW} + RULES), HumanMessage(content=q)])\n",
        # the earlier turns ahead of the rules: the user's text is per request
        "ai_turn.py": LC
        + "def ask(llm, q, last):\n"
        + "    return llm.invoke([HumanMessage(q), AIMessage(last), SystemMessage(RULES)])\n",
        "llama_role.py": (
            "from llama_index.core.llms import ChatMessage\n\n\ndef ask(llm, q):\n"
            f"    return llm.chat([ChatMessage(role='system', content={NOW} + RULES), ChatMessage(q)])\n"
        ),
    }
    assert findings(tmp_path, modules) == [
        ("PFX101", "keyword.py", 12, 53),
        ("PFX101", "llama_role.py", 12, 64),
        ("PFX101", "positional.py", 12, 45),
        ("PFX109", "ai_turn.py", 12, 37),
    ]


def test_prompt_templates(tmp_path: Path) -> None:
    """A placeholder filled per request is found in the template text, whatever the template
    format; a history placeholder ahead of the rules is history."""
    fmt = "'Today is {today}.\\n' + RULES"
    jinja = "'Today is {{ today }}.\\n' + RULES"
    mustache = "'Today is {{today}}.\\n' + RULES"
    modules = {
        "sys_template.py": PT
        + "def ask(llm, q):\n    prompt = ChatPromptTemplate.from_messages(\n"
        + f"[SystemMessagePromptTemplate.from_template({fmt}), ('human', '{{q}}')])\n"
        + "    return llm.invoke(prompt.format_messages(today=datetime.now(), q=q))\n",
        "jinja.py": PT
        + "def ask(llm, q):\n"
        + f"    system = SystemMessagePromptTemplate.from_template({jinja}, template_format='jinja2')\n"
        + "    prompt = ChatPromptTemplate.from_messages([system, ('human', '{q}')])\n"
        + "    return llm.invoke(prompt.format_messages(today=datetime.now(), q=q))\n",
        "mustache.py": PT
        + "def ask(llm, q):\n"
        + f"    system = SystemMessagePromptTemplate.from_template({mustache}, template_format='mustache')\n"
        + "    prompt = ChatPromptTemplate.from_messages([system, ('human', '{q}')])\n"
        + "    return llm.invoke(prompt.format_messages(today=datetime.now(), q=q))\n",
        "history_first.py": PT
        + "def ask(llm, q, history):\n    prompt = ChatPromptTemplate.from_messages(\n"
        + "[MessagesPlaceholder('history'), ('system', RULES), ('human', '{q}')])\n"
        + "    return llm.invoke(prompt.format_messages(history=history, q=q))\n",
        "placeholder_tuple.py": PT
        + "def ask(llm, q, history):\n    prompt = ChatPromptTemplate.from_messages(\n"
        + f"[('system', {fmt}), ('placeholder', '{{history}}'), ('human', '{{q}}')])\n"
        + "    return llm.invoke(prompt.format_messages(today=datetime.now(), history=history, q=q))\n",
    }
    # ``today`` names a date: a daily change (PFX111); {{ today }} is a placeholder only where the
    # template is Jinja or Mustache
    assert findings(tmp_path, modules) == [
        ("PFX111", "jinja.py", 17, 66),
        ("PFX111", "mustache.py", 17, 66),
        ("PFX111", "placeholder_tuple.py", 18, 23),
        ("PFX111", "sys_template.py", 18, 54),
    ]
