"""Sources: turn Python code, prompt templates and request payloads into layouts.

Takes source text (``python/``, ``templates/``) or a request body (``payloads/``) and the settings;
gives :class:`prefixlint.model.layout.Layout` objects plus analysis errors. Imports only ``model`` and
``plugins``; nothing here knows about rules or reporters.
"""
