"""The SDK: a drop-in wrapper for openai and anthropic clients.

``client = prefixlint.sdk.wrap(OpenAI(), tenant="acme")`` returns the same client, patched so every
request is canonicalized (opt-in), keeps volatile values behind the static prefix, carries a tenant
key or salt and Anthropic breakpoints, and yields a :class:`CacheReport`. See the SDK section of README.md.

Takes each live request body (a source, like code or a log) and the provider's reported usage; gives a
request layout, a predicted hit interval from the prefix-cache model, and a report of the verdict.
Imports ``model`` and ``analysis`` only.
"""

from prefixlint.sdk.options import SALT_SECRET_ENV, RequestInfo, SdkConfigError, SdkOptions
from prefixlint.sdk.report import CacheReport, Divergence, Verdict
from prefixlint.sdk.stats import StatsSnapshot
from prefixlint.sdk.tenancy import PrepareError, TenancyError, TenantRequiredError, current_tenant, tenant
from prefixlint.sdk.volatile import volatile
from prefixlint.sdk.wrap import detect_provider, flush, forget, is_wrapped, stats, unwrap, wrap

__all__ = [
    "SALT_SECRET_ENV",
    "CacheReport",
    "Divergence",
    "PrepareError",
    "RequestInfo",
    "SdkConfigError",
    "SdkOptions",
    "StatsSnapshot",
    "TenancyError",
    "TenantRequiredError",
    "Verdict",
    "current_tenant",
    "detect_provider",
    "flush",
    "forget",
    "is_wrapped",
    "stats",
    "tenant",
    "unwrap",
    "volatile",
    "wrap",
]
