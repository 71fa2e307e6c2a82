"""Tools that talk to a running server: TTFT bench, retention, comparison (``prefixlint bench``).

Takes an OpenAI-compatible endpoint; gives measurements (TTFT per arm, reported vs timed cache hits,
Prometheus counters) as JSON-ready results. Modules: ``client`` (streaming TTFT), ``prompts``
(exact-length prompts), ``ttft``, ``calibrate`` (threshold, KS test), ``metrics``, ``retention``,
``compare``, ``plot``, ``summary``, ``results`` (the JSON schema), ``fake_server`` and ``serving``.
"""
