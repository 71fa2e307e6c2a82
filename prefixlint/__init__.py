"""prefixlint: make LLM prompts hit the provider's prefix cache, and prove it."""

__version__ = "0.1.0"
