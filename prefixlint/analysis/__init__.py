"""Sources: turn code, templates and payloads into layouts.

Each sub-package reads one kind of input and produces :class:`prefixlint.layout.Layout` objects.
Nothing here imports :mod:`prefixlint.rules` or a reporter.
"""
