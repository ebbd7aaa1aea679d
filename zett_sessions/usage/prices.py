"""A user's price table for ``usage --prices FILE``: the tool ships no prices.

The file is JSON (or TOML when its name ends in ``.toml``)::

    {"currency": "USD",
     "models": {"claude-sonnet-4-5": {"input": 3, "output": 15, "cache_read": 0.3,
                                      "cache_write": 3.75},
                "openai/gpt-5": {"input": 1.25, "output": 10}}}

Prices are per million tokens.  A model is looked up as ``provider/model`` first, then as
``model``.  ``cache_read`` and ``cache_write`` default to ``input`` (no discount is assumed).
``input_tokens`` includes cache reads and writes (format.md), so a response costs
``(input - cache_read - cache_write) × input + cache_read × cache_read + cache_write ×
cache_write + output × output`` (reasoning is part of output).  Any defect of the file is one
``UsageError`` line (exit 2) naming the file and the first problem.

Costs are ``Decimal``: a price is taken as written (``0.3`` is three tenths, not the float
nearest it) and no price a file can hold, however large, makes a cost overflow to infinity.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import UsageError
from ..models import ModelUsage
from ..values import whole_number

Price = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
MILLION = 1_000_000
MAX_FILE_BYTES = 16 * 1024 * 1024  # far above any price table; /dev/zero is no price table


class ModelPrice(BaseModel):
    """One model's prices per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: Price
    output: Price
    cache_read: Price | None = None
    cache_write: Price | None = None

    def cost(self, usage: ModelUsage) -> Decimal:
        """What ``usage`` costs at these prices."""
        return self.cost_of(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        )

    def cost_of(
        self, input: float, output: float, cache_read: float, cache_write: float
    ) -> Decimal:
        """What these token counts cost (``input`` includes the cache reads and writes; counts
        are read as ``usage`` shows them, ``values.whole_number``)."""
        prices = [self.input, self.output, self.cache_read, self.cache_write]
        fresh_price, output_price, read_price, write_price = (
            _exact(self.input if price is None else price) for price in prices
        )
        fresh, out, read, write = (
            Decimal(whole_number(count)) for count in (input, output, cache_read, cache_write)
        )
        fresh -= read + write
        total = fresh * fresh_price + read * read_price + write * write_price + out * output_price
        return total / MILLION


def _exact(price: float) -> Decimal:
    """A price as its file wrote it: the shortest decimal that reads back as the float."""
    return Decimal(repr(price))


class PriceTable(BaseModel):
    """The user's prices: ``models`` by name (``provider/model`` or ``model``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    currency: Annotated[str, Field(min_length=1, max_length=16)] | None = None
    models: dict[Annotated[str, Field(min_length=1)], ModelPrice]

    def price(self, provider: str | None, model: str | None) -> ModelPrice | None:
        """The price of ``model`` (as ``provider/model`` first); ``None`` when it has none."""
        if model is None:
            return None
        if provider is not None:
            found = self.models.get(f"{provider}/{model}")
            if found is not None:
                return found
        return self.models.get(model)


def load_prices(path: str) -> PriceTable:
    """The price table in the file at ``path``; a missing, unreadable or invalid file is a
    one-line ``UsageError``."""
    try:
        data = _read(path)
        if len(data) > MAX_FILE_BYTES:
            raise UsageError(f"--prices {path}: not a price table (larger than 16 MiB)")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"--prices {path}: cannot read it ({reason})") from None
    try:
        return PriceTable.model_validate(_parse(path, text))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise UsageError(f"--prices {path}: {where}: {first['msg']}") from None


def _read(path: str) -> bytes:
    """The file's bytes.  Opened non-blocking, so a FIFO nobody writes to reads as empty instead
    of waiting forever; a pipe with a writer (``--prices <(…)``) is read to its end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as file:
        os.set_blocking(fd, True)
        return file.read(MAX_FILE_BYTES + 1)


def _parse(path: str, text: str) -> object:
    if path.lower().endswith(".toml"):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise UsageError(f"--prices {path}: not TOML ({error})") from None
        except RecursionError:
            raise UsageError(f"--prices {path}: not TOML (nested too deeply)") from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise UsageError(f"--prices {path}: not JSON ({error})") from None
    except RecursionError:
        raise UsageError(f"--prices {path}: not JSON (nested too deeply)") from None
