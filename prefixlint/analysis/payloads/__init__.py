"""Payload analysis: a provider request body (a dict) to pieces and to a
:class:`~prefixlint.model.layout.Layout`.

The order is the provider's prefix order: tools (and structured-output schemas), then
system/instructions, then messages. Every piece carries its token count, a content hash and a chained
hash of everything before it; :class:`PieceCache` remembers them by content so a new conversation turn
only tokenizes what is new. Modules, one job each:

- ``pieces``: a body to pieces; ``to_layout``: pieces to a layout; ``shapes``: which API a body is for.
- ``sniff``: a JSON file's first keys; ``json_reader``: JSON with every value's position;
  ``documents``: payload files (JSON, JSON Lines, batch lines) to requests.
- ``samples``: pieces to alignment units; ``align``: samples of one template aligned; ``kinds``: the
  kind of a changed value; ``divergence``: where two requests first differ.
- ``analyze``: payload files to layouts for the rules; ``compare``: ``prefixlint diff``'s data.
"""

from prefixlint.analysis.payloads.pieces import PieceCache, pieces_from_request
from prefixlint.analysis.payloads.to_layout import layout_from_request
from prefixlint.model.pieces import Piece

__all__ = ["Piece", "PieceCache", "layout_from_request", "pieces_from_request"]
