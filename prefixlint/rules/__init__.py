"""Rules: read a layout, give findings. One rule a file, each carrying its own valid and invalid examples.

Takes a token-counted :class:`~prefixlint.model.layout.Layout` and the settings; gives
:class:`~prefixlint.model.findings.Finding` objects with their impact and fixes. Imports only ``model``
and ``plugins``; rules never read syntax trees or write files.
"""
