"""Instants: stored as TIMESTAMPTZ, handed out as timezone-aware UTC datetimes."""

from datetime import UTC, datetime


def as_utc(moment: datetime) -> datetime:
    """Naive datetimes are taken as UTC.

    Writes pass instants through this so that none is ambiguous. Reads select TIMESTAMPTZ columns as
    ``::TIMESTAMP`` (the session zone is UTC) and attach the zone here: DuckDB's own TIMESTAMPTZ conversion
    goes through pytz at about 7 us a value, which was two thirds of the time of a 2,000-row ranking.
    """
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
