"""The model every stage shares: a request's layout, tokens, provider facts, the prefix-cache model, findings.

Takes nothing from the rest of the package. Gives the types the other stages exchange (``Layout``,
``Segment``, ``Piece``, ``Finding``, ``Settings``), token counts, and provider facts from ``data/*.toml``.
"""
