"""What perfdb raises for its callers to report: kept apart from SQLAlchemy, so that a command line
can catch them without importing the database machinery."""

from __future__ import annotations


class DatabaseError(Exception):
    """The database cannot be reached or used; str() is one line naming the cause."""


class RunNotFound(LookupError):
    def __init__(self, run_id: int) -> None:
        super().__init__(f"no run with id {run_id}")
