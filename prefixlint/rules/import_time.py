"""PFX201: a value computed once per process (import time, default argument) ahead of static text."""

from __future__ import annotations

from prefixlint.model.findings import Severity
from prefixlint.model.layout import DynamicKind, Segment, Timing
from prefixlint.rules._dynamic import DynamicBeforeStatic
from prefixlint.rules._examples import HEADER, RULES, bad
from prefixlint.rules.base import Example

_BOT = (
    "from datetime import datetime\n" + HEADER + f"RULES = {RULES!r}\n"
    'SYSTEM = f"Service started {datetime.now():%Y-%m-%d %H:%M}.\\n" + RULES\n\n\n'
    "def ask(q):\n"
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": SYSTEM}, {"role": "user", "content": q}])\n'
)
_DEFAULT_ARG = (
    "import os\n" + HEADER + f"RULES = {RULES!r}\n\n\n"
    "def ask(q, pid=os.getpid()):\n"
    '    system = f"Worker {pid}.\\n" + RULES\n'
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": system}, {"role": "user", "content": q}])\n'
)
_CONSTANT = (
    HEADER + f"RULES = {RULES!r}\n"
    'VERSION = "2.1"\n'
    'SYSTEM = f"Harbor {VERSION}.\\n" + RULES\n\n\n'
    "def ask(q):\n"
    '    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": SYSTEM}, {"role": "user", "content": q}])\n'
)
_SETTING = (
    HEADER + f"RULES = {RULES!r}\n\n\n"
    "class Bot:\n"
    "    def __init__(self, config):\n"
    "        self.config = config\n\n"
    "    def ask(self, q):\n"
    '        system = f"Answer in at most {self.config.max_words} words.\\n" + RULES\n'
    '        return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", '
    '"content": system}, {"role": "user", "content": q}])\n'
)


# Kinds of value that take other bytes in another process (a clock, an id, a random draw, the
# machine or its environment). A configuration value of no such kind (``self.config.max_length``) is
# the same in every replica and after a restart: nothing is known to split the cache.
DIFFERS_PER_PROCESS = frozenset(
    {DynamicKind.TIMESTAMP, DynamicKind.IDENTIFIER, DynamicKind.RANDOM, DynamicKind.ENVIRONMENT}
)


class ImportTimeBeforeStatic(DynamicBeforeStatic):
    """A value computed once per process sits ahead of static prompt text.

    A module-level f-string with ``datetime.now()``, or a default argument such as
    ``def build(now=datetime.now())``, is evaluated once at import. It is constant within a
    process, so one replica caches fine, but the bytes differ between replicas and after every
    restart or deploy. A cache shared across replicas (OpenAI's is per organisation) is split,
    and each deploy starts cold. Lower severity than a per-request value. Only values known to
    differ between processes are reported (a time, an id, a random value, the machine or an
    environment variable): a setting read from configuration is the same in every replica.

    Fix: drop the value, make it a real constant (a version string), or move it after the static
    text.

    Fix safety: The fix is unsafe: it changes the text the model reads. The value moves after the
    instructions (or its line moves to the end of the prompt), and a model may answer differently
    when instructions and data change places. The program itself runs as before; review the new
    prompt, then apply it with ``--unsafe-fixes``.
    """

    code = "PFX201"
    name = "process-value-before-static"
    default_severity = Severity.LOW
    timing = Timing.PROCESS

    def matches(self, seg: Segment) -> bool:
        return seg.timing is Timing.PROCESS and seg.kind in DIFFERS_PER_PROCESS

    INVALID = [bad(_BOT, marker="SYSTEM = f"), bad(_DEFAULT_ARG, marker="def ask")]
    VALID = [
        Example(_CONSTANT, note="an f-string over module constants is static"),
        Example(_SETTING, note="a setting read from configuration is the same in every process"),
    ]
