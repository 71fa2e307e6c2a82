"""prefixlint: make LLM prompts hit the provider's prefix cache, and prove it.

The package is split by stage, and data flows one way (see ``docs/architecture.md``): sources
(``analysis``, ``sdk``, ``live``) -> ``model`` (the layout) -> ``rules`` or the prefix-cache model ->
findings or reports -> ``report``; ``lint`` and ``commands`` drive them, ``cli`` mounts the commands.
"""

from prefixlint import _moved

__version__ = "0.1.0"

_moved.install()
