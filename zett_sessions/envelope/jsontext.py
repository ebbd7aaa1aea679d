"""Parsing stored JSON text: one fast parser, and the standard library's answer for every text.

Every reader of a stored JSON column (``message_json``, ``metadata_json``, ``tags_json``) parses
through here.  One reused msgspec decoder does the work; whatever it refuses goes to ``json``,
so a caller always gets exactly what ``json.loads`` gives, value or error:

* msgspec refuses what Python's parser accepts beyond strict JSON: ``NaN``/``Infinity``, numbers
  past the float range (``json``: ``inf``), lone surrogates (``"\\ud800"``), nesting past its
  depth limit.  Those texts are parsed again by ``json`` (and its error is the one raised).
* On everything else both parsers agree (dict key order, duplicate keys, big integers, floats).
  orjson was measured too, as fast on these texts, but it silently turns an integer beyond 64
  bits into a float, which no fallback can catch without a second look at every text.
* A text longer than ``LONG`` goes to ``json`` directly: msgspec unescapes each string into a
  scratch buffer it keeps beside the string it builds, so a 30 MB message peaks at twice its
  size inside the parser (``json``: 1.2x), which ``show``/``tail`` on one huge message feel
  (``bench/big_message.py``).  Speed matters for many short texts, not for a few long ones.

``tests/test_json_parse.py`` feeds both parsers the same texts; the envelope readers' test runs
its envelopes with msgspec disabled as well.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_DECODER = msgspec.json.Decoder()
_REFUSED = (msgspec.MsgspecError, ValueError, RecursionError)
LONG = 1 << 20  # characters: a longer text is parsed by ``json`` (bounded memory, see above)


def loads(text: str) -> Any:
    """``json.loads(text)``: its value, or its ``ValueError`` / ``RecursionError``."""
    if len(text) > LONG:
        return json.loads(text)
    try:
        return _DECODER.decode(text)
    except _REFUSED:
        return json.loads(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: not JSON (SQLite's json_valid says so too)


def loads_strict(text: str) -> Any:
    """The value of strict JSON text (what SQLite's ``json_valid`` accepts); ``ValueError`` or
    ``RecursionError`` for anything else, ``NaN`` and ``Infinity`` included."""
    if len(text) > LONG:
        return json.loads(text, parse_constant=_reject_constant)
    try:
        return _DECODER.decode(text)
    except _REFUSED:
        return json.loads(text, parse_constant=_reject_constant)


__all__ = ["loads", "loads_strict"]
