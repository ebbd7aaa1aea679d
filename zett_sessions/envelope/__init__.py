"""The one owner of ``message_json``: every reading and writing of a message envelope.

The envelope (format.md §2) is a JSON array of one element ``{"kind": <int>, "data": {…}}``;
``data`` holds the message's fields (``dataclasses.asdict``), a ``bytes`` value as
``{"__kcs_bytes__": "<base64>"}``.  Which keys ``data`` carries depends on the era that wrote it
(format.md §0); a missing key decodes as its default, so ``include_in_messages`` of an old system
prompt is false and of any other old message true.

* ``table`` declares the kinds (class, key sets per era, defaults) and the keys a fast reader
  must check before it may vouch for an envelope.
* ``codec`` is the full Python decoder and encoder: the reference (also zett-agent's list
  functions ``encode_messages`` / ``decode_messages``).  "Belongs in model context" is
  ``models.in_context``, a fact of the decoded message.
* ``light`` reads the checked keys only, without building the model (``show``'s JSON stream,
  the flag scan, verify's stand-ins), and splices the stored element into JSON output.
* ``sql`` generates what SQLite computes instead of Python: ``show --json``'s envelope code and
  verify's canonical-opening scan.

Every reader is derived from the table, and ``tests/test_envelope_readers.py`` feeds the same
envelopes (valid ones of every era, damaged ones) to all of them and requires them to agree: a
fast reader either defers to the full decoder or says what it says.
"""

from __future__ import annotations

from .codec import (
    BYTES_MARKER,
    decode_checkpoint,
    decode_envelope,
    decode_messages,
    element,
    encode_as_stored,
    encode_message,
    encode_messages,
    parse_envelope,
    to_wire,
)
from .light import call_objects, element_text, light_message, strict_json
from .table import ERAS, KINDS, Era, KindSpec

__all__ = [
    "BYTES_MARKER",
    "ERAS",
    "KINDS",
    "Era",
    "KindSpec",
    "call_objects",
    "decode_checkpoint",
    "decode_envelope",
    "decode_messages",
    "element",
    "element_text",
    "encode_as_stored",
    "encode_message",
    "encode_messages",
    "light_message",
    "parse_envelope",
    "strict_json",
    "to_wire",
]
