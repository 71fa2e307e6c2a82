"""Usage normalisation lives in :mod:`prefixlint.model.usage` (the log audit reads usage too)."""

from prefixlint.model.usage import NormalizedUsage, normalize_usage

__all__ = ["NormalizedUsage", "normalize_usage"]
