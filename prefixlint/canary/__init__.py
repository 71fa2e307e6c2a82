"""Measure prefix-cache TTFT against a live server and check what it claims (``prefixlint bench``).

Modules, one job each: ``client`` (streaming TTFT), ``prompts`` (exact-length prompts),
``ttft`` (the hit/miss benchmark), ``calibrate`` (threshold, KS test, disagreements), ``metrics``
(Prometheus counters), ``retention``, ``compare``, ``plot``, ``summary``, ``results`` (JSON schema),
``cli`` (the typer app), ``fake_server`` (a controllable server for tests and demos).
"""
