"""Tenancy values are stable across releases: a change would send every tenant to a cold cache."""

from __future__ import annotations

from prefixlint.sdk.tenancy import derive_cache_salt, derive_prompt_cache_key, tenant_hash

SECRET = b"0123456789abcdef0123456789abcdef"


def test_tenant_hashes_keys_and_salts_are_the_ones_earlier_releases_derived() -> None:
    assert tenant_hash("acme") == "d485105e71f7d650"
    assert tenant_hash("acme", SECRET) == "d8ad00265ff0a302"
    assert derive_prompt_cache_key("acme", "f00d") == "pfx-e563b15d5ee7ae8801c44acd"
    assert derive_prompt_cache_key("acme", "f00d", SECRET) == "pfx-1df59610ec52ddc030f7d344"
    assert derive_cache_salt("acme", SECRET) == "-QaBZPA2Yy5fpWNU0GgbS4xoBarTKQxLEFkG0l-OpmQ"


def test_the_name_and_the_prefix_are_kept_apart() -> None:
    assert derive_prompt_cache_key("acme", "f00d") != derive_prompt_cache_key("acmef", "00d")
