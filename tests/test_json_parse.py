"""``envelope.jsontext`` answers every text as the standard library does: value or error."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zett_sessions.envelope import jsontext


def _reject(name: str) -> Any:
    raise ValueError(name)


def _typed(value: Any) -> Any:
    """A value with its types and dict key order spelled out (``1 == 1.0 == True`` otherwise);
    NaN as a word, since it equals nothing."""
    if isinstance(value, dict):
        return ("dict", [(key, _typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _outcome(parse: Any, text: str) -> Any:
    try:
        return _typed(parse(text))
    except (ValueError, RecursionError) as error:
        return type(error).__name__


def _strict_reference(text: str) -> Any:
    return json.loads(text, parse_constant=_reject)


EDGES = [
    '["\\ud800"]',  # a lone surrogate: the fast parser refuses it
    '{"a": "\\udc00x\\ud83d"}',
    "[123456789012345678901234567890]",  # beyond 64 bits: an int, never a float
    "[18446744073709551616, -9223372036854775809]",
    "[18446744073709551615, -9223372036854775808]",
    "[1e400, -1e400, 1.7976931348623157e309]",  # Python's parser: infinity
    "[NaN, Infinity, -Infinity]",
    "[" + "9" * 5000 + "]",  # past Python's digit limit: an error on both paths
    "[" * 3000 + "]" * 3000,  # past both parsers' depth
    "[" * 200 + "]" * 200,
    '{"a": 1, "b": 2, "a": 3}',  # a repeated key keeps its first place and its last value
    "[-0.0, -0, 0.1e-400, 5e-324, 1E2, 2.2250738585072014e-308]",
    "[1.00000000000000011102230246251565404236316680908203125]",
    "\ufeff[1]",
    " [1]\n\t\r ",
    '["\x01"]',
    "[1,]",
    "[01]",
    "[.5]",
    "[1.]",
    "{'a': 1}",
    "[1] 2",
    '"\\u0000"',
    "",
]


@pytest.mark.parametrize("text", EDGES)
def test_each_edge_parses_as_the_standard_library_parses_it(text: str) -> None:
    assert _outcome(jsontext.loads, text) == _outcome(json.loads, text)
    assert _outcome(jsontext.loads_strict, text) == _outcome(_strict_reference, text)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    """Texts ``json.dumps`` writes (NaN, surrogates and all), some of them cut or spliced."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        cut = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:cut] + draw(st.sampled_from(["", ",", "]", "}", '"', " ", "e9", "\\"]))
    return text


@settings(max_examples=300, deadline=None)
@given(json_texts())
@example('{"k": [1, 2.5, "\\ud800", 99999999999999999999]}')
def test_any_text_parses_as_the_standard_library_parses_it(text: str) -> None:
    assert _outcome(jsontext.loads, text) == _outcome(json.loads, text)
    assert _outcome(jsontext.loads_strict, text) == _outcome(_strict_reference, text)
