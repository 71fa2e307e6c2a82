"""Tools that talk to a running server: ``prefixlint bench``, ``canary`` and ``probe``.

Takes an OpenAI-compatible endpoint; gives measurements and verdicts as JSON-ready results.

* plumbing: ``client`` (streamed TTFT, non-streamed answers with logprobs), ``server_info`` (models,
  ``max_model_len``, KV pool), ``sizing`` (the server's prompt overhead), ``prompts`` (exact-length
  prompts), ``tenants``, ``pacing`` (rate and budget), ``serving`` and ``fake_server`` (tests);
* bench: ``ttft``, ``calibrate`` (threshold, KS test), ``metrics``, ``retention``, ``compare``,
  ``plot``, ``summary``, ``results`` (the JSON schema);
* canary: ``canary`` (the checks), ``leaks`` (canary markers, copied words, greedy comparison),
  ``canary_report``;
* probe: ``probe`` (Gu et al.'s procedures per sharing level), ``sequential`` (looks and KS
  decisions), ``probe_report``.
"""
