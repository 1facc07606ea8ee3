"""Alembic's environment for the perf database. perfdb.migrate runs it on the connection it passes
in `config.attributes["connection"]` (inside its own transaction and lock); without one it opens
the config's `sqlalchemy.url`, e.g. to autogenerate a new revision against a scratch database."""

from alembic import context
from sqlalchemy import Connection, create_engine, pool

from tilescope.perfdb.schema import Base

config = context.config


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,  # what autogenerate compares the database with
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("perfdb migrations run online only: pass a connection or set sqlalchemy.url")
if config.attributes.get("connection") is not None:
    run(config.attributes["connection"])
else:
    with create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool).begin() as connection:
        run(connection)
