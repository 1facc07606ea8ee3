"""`tilescope db upgrade`: bring a perf database's schema to the newest revision."""

from __future__ import annotations

from tilescope.perfdb.engine import open_db
from tilescope.perfdb.migrate import current


def upgrade_main(db: str | None) -> int:
    """Every command upgrades the database it opens; this one does only that, e.g. for a shared
    PostgreSQL database before its users' tilescope opens it."""
    engine = open_db(db)  # upgrades, or raises a one-line DatabaseError
    with engine.connect() as connection:
        revision = current(connection)
    print(f"database {engine.url.render_as_string(hide_password=True)}: schema at revision {revision}, the newest")
    return 0
