"""``JsonValue``: what request metadata and tags may hold (zett-agent's definition).

Plain JSON only: ``None``, booleans, integers, finite floats, strings, lists and objects with
string keys.  ``codec.encode_json_object`` checks a value against it before anything is written.
"""

from __future__ import annotations

from typing_extensions import TypeAliasType

JsonValue = TypeAliasType(
    "JsonValue", "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
)

__all__ = ["JsonValue"]
