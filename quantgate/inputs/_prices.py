"""A team's prices, from a flat TOML file (`--costs FILE`), for the expected cost per 1,000 extractions.

Every key is optional; a price that is not given is not counted (its ingredient is shown as
not counted, never as 0):

    format_version = 1
    currency = "EUR"                   # a label for the tables
    review_per_case = 4.0              # one human review of a case with at least one wrong field
    review_per_field = {date = 1.5, "*" = 0.5}   # or: per wrong field ("*": every other field)
    retry_call = 0.002                 # one more model call (a repair or a retry)
    node_per_hour = 1.20               # the machine serving the model, per hour
    memory_per_gib_hour = 0.01         # or/and: resident model memory, per GiB-hour
    energy_per_1k_tokens = 0.0004      # energy of 1,000 generated tokens, if known
    extractions_per_hour = 500         # the traffic the node serves (none: it is always busy)
    request_rate_rps = 10              # machines: the request rate to serve (requests per second)
    machine_price_per_hour = 2.50      # machines: one machine serving the model, per hour
    machine_memory_gib = 8             # machines: its memory, for the memory model's sequences

`review_per_case` and `review_per_field` are two ways of pricing the same review: give one.
With `request_rate_rps` and `machine_price_per_hour`, each variant is also priced by the machines its
measured goodput needs for that rate (`quantgate.capacity._machine_table`), beside the per-case costs.
Values are typed strictly (a price is a TOML number, never a string or a boolean; an integer is
taken as a float), finite, and at most `MAX_PRICE`; `extractions_per_hour` is at least
`MIN_TRAFFIC`, so that no cost per 1,000 extractions can overflow to infinity. Text (the currency,
the fields of `review_per_field`) has no control characters, which decision.md and the terminal
would otherwise carry as they are (an ESC byte).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from evaluators.errors import UsageError
from quantgate.inputs._tomlfile import read_toml, validation_message

__all__ = ["ANY_FIELD", "MAX_PRICE", "MIN_TRAFFIC", "CostsError", "Prices", "load_prices"]

ANY_FIELD = "*"
"""The key of `review_per_field` that prices every field not named."""

MAX_PRICE = 1e12
"""The largest price a costs file may give: far above any real one, far below a double's overflow."""
MIN_TRAFFIC = 1e-6
"""The smallest `extractions_per_hour` (one extraction in 114 years): traffic divides the node time."""

Price = Annotated[float, Field(ge=0.0, le=MAX_PRICE)]


def _no_control_characters(text: str) -> str:
    if not text.isprintable():  # control and format characters (bidi controls) are not
        raise ValueError(f"{text!a} has control characters (such as ESC, a tab or a line break)")
    return text


PlainText = Annotated[str, AfterValidator(_no_control_characters)]
"""Text shown in tables and decision.md as it is: no control characters."""


class CostsError(UsageError):
    """A costs file that cannot be used; the message names the file and key."""


class Prices(BaseModel):
    """What things cost a team (see the module docstring for the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    format_version: Literal[1] = 1
    currency: PlainText = ""
    review_per_case: Price | None = None
    review_per_field: dict[PlainText, Price] | None = None
    retry_call: Price | None = None
    node_per_hour: Price | None = None
    memory_per_gib_hour: Price | None = None
    energy_per_1k_tokens: Price | None = None
    extractions_per_hour: Annotated[float, Field(ge=MIN_TRAFFIC, le=MAX_PRICE)] | None = None
    request_rate_rps: Annotated[float, Field(ge=MIN_TRAFFIC, le=MAX_PRICE)] | None = None
    machine_price_per_hour: Price | None = None
    machine_memory_gib: Annotated[float, Field(gt=0, le=MAX_PRICE)] | None = None

    @model_validator(mode="after")
    def _one_review_price(self) -> Prices:
        if self.review_per_case is not None and self.review_per_field is not None:
            raise ValueError("give review_per_case or review_per_field, not both (two prices of one review)")
        return self

    def field_price(self, field: str) -> float | None:
        """The review price of one wrong `field` (None: per-field review is not priced for it)."""
        if self.review_per_field is None:
            return None
        return self.review_per_field.get(field, self.review_per_field.get(ANY_FIELD))


def load_prices(path: str | Path) -> Prices:
    """The prices in a costs TOML file.

    Raises:
        CostsError: The file is missing or malformed, a key is unknown, or a value is out of range.
    """
    values = read_toml(path, what="costs file", error=CostsError)
    try:
        return Prices.model_validate(values)
    except ValidationError as exc:
        raise CostsError(validation_message(exc, str(path))) from None
