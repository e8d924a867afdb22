"""Values as XDS text (PUBLISHER.md section 4), as Spark expressions: the same rules for a
value from the log and a current value read back as text."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from publisher.model import values

_TRUE_WORDS = ("1", "true", "t", "y", "yes", "on")
_FALSE_WORDS = ("0", "false", "f", "n", "no", "off")
_TIME_OF_DAY = r"^([0-9]{1,2}):([0-9]{2})(:([0-9]{2})(\.[0-9]+)?)?$"


def _seconds_of_day(text: Column) -> Column:
    part = lambda n: F.regexp_extract(text, _TIME_OF_DAY, n).cast("int")  # noqa: E731
    seconds = F.coalesce(F.regexp_extract(text, _TIME_OF_DAY, 4).try_cast("int"), F.lit(0))
    return (part(1) * 3600 + part(2) * 60 + seconds).cast("string")


def xds_text(raw: Column, xds_type: Column, is_char: Column) -> tuple[Column, Column]:
    """(text, valid): ``raw`` (text, or binary for octet) as XDS text of ``xds_type``.
    NULL stays NULL and is valid."""
    trimmed = F.trim(raw)
    word = F.lower(trimmed)
    state = F.when(word.isin(list(_TRUE_WORDS)), F.lit("true")).when(
        word.isin(list(_FALSE_WORDS)), F.lit("false")
    )
    digits = trimmed.rlike("^-?[0-9]+$")
    time = (
        F.when(digits, trimmed)
        .when(trimmed.rlike(_TIME_OF_DAY), _seconds_of_day(trimmed))
        .otherwise(F.unix_timestamp(F.try_to_timestamp(trimmed)).cast("string"))
    )
    text = (
        F.when(raw.isNull(), F.lit(None))
        .when(xds_type == values.INT, F.when(digits, trimmed))
        .when(xds_type == values.STATE, state)
        .when(xds_type == values.TIME, time)
        .when(is_char, F.rtrim(raw))
        .otherwise(raw)
    )
    return text, raw.isNull() | text.isNotNull()


def octet_text(raw: Column) -> Column:
    """Binary as Base64 text (the log already holds octet values as Base64)."""
    return F.base64(raw)


def forbidden_position(text: Column) -> Column:
    """1-based position of the first character XML 1.0 cannot carry; 0 when none."""
    return F.regexp_instr(text, F.lit(values.XML_FORBIDDEN))
