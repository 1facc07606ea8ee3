"""The tracing database's tables: models and targets, runs of one on the other, their per-op records,
timeline zones (with their level-of-detail markers) and counters in blocks, and where measured runs
were imported from."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """Timestamps stored in UTC and read back in UTC: SQLite drops the zone, PostgreSQL returns the
    server's time zone."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        return value.astimezone(timezone.utc) if value is not None and value.tzinfo else value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Model(Base):
    """A model's source, stored once however many runs it has: the text is kept so any run can be
    re-compiled and re-run whatever has happened to the file since."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("name", "source_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(256))
    source_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the text
    # read with the run it belongs to (perfdb.runs.get_run), not with every run listed
    source_text: Mapped[str] = mapped_column(Text, deferred=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=_now)


class Target(Base):
    """A target description (TOML) as a run used it: edits to a target file make a new row, so an
    old run still re-runs on the machine it was simulated on."""

    __tablename__ = "targets"
    __table_args__ = (UniqueConstraint("name", "description_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(256))
    description_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the description
    description: Mapped[str] = mapped_column(Text)  # empty for runs stored before descriptions were kept
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=_now)


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_ref: Mapped[str] = mapped_column(String(1024))  # how it was asked for: 'zoo:mlp' or a file path
    target_ref: Mapped[str | None] = mapped_column(String(1024))  # built-in name or file path asked for
    dispatch: Mapped[str] = mapped_column(String(16), default="host")
    policy: Mapped[str] = mapped_column(String(32), default="dram-interleaved")
    l1_usage_cap: Mapped[float] = mapped_column(Float, default=0.8)
    overrides: Mapped[list] = mapped_column(JSON, default=list)  # override items as text
    override_outcomes: Mapped[list] = mapped_column(JSON, default=list)
    label: Mapped[str] = mapped_column(String(512), default="")
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=_now)
    total_ns: Mapped[float] = mapped_column(Float)
    device_ns: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(16), default="simulated", server_default="simulated")  # or measured
    tracks: Mapped[list] = mapped_column(JSON, default=list, server_default="[]")  # timeline tracks, in order
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id"), index=True)
    target_id: Mapped[int] = mapped_column(ForeignKey("targets.id"), index=True)
    # the ops the compiler hoisted into load-time evaluation (const-eval), run once per model load
    # and not in total_ns: [{name, kind, duration_ns, bytes (by path), bound, memory}] in the
    # order they ran (perfdb.records.LoadOp); deferred: the run lists never show them
    load_ops: Mapped[list] = mapped_column(JSON, default=list, server_default="[]", deferred=True)
    load_ns: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")  # their total
    # the mesh its devices formed, [[axis, size], ...] major to minor: what a diff across device
    # counts names; [] on one device, and for runs stored before meshes were kept (perfdb.meshes)
    mesh: Mapped[list] = mapped_column(JSON, default=list, server_default="[]")
    # compiled with data-tiling (IREE's flag): matmul operands packed into the target's inner tiles
    data_tiling: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    model: Mapped[Model] = relationship(lazy="selectin")
    target: Mapped[Target] = relationship(lazy="selectin")
    ops: Mapped[list[OpRecord]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="OpRecord.start_ns"
    )


class OpRecord(Base):
    """An op of a run: the fields of compiler.sim.records.OpTiming, one column each, which say what
    each holds; bytes (by path) and tensors (each a TensorUse.as_dict()) as JSON."""

    __tablename__ = "op_records"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(64))
    start_ns: Mapped[float] = mapped_column(Float)
    duration_ns: Mapped[float] = mapped_column(Float)
    flops: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[dict] = mapped_column(JSON)
    bound: Mapped[str] = mapped_column(String(16))
    why: Mapped[str] = mapped_column(Text, default="")
    memory: Mapped[str] = mapped_column(String(32))
    grid: Mapped[str] = mapped_column(String(16))
    cores: Mapped[int] = mapped_column(Integer)
    roofline_ns: Mapped[float] = mapped_column(Float)
    pct_peak: Mapped[float] = mapped_column(Float, default=0.0)
    dispatch_wait_ns: Mapped[float] = mapped_column(Float, default=0.0)
    level: Mapped[str] = mapped_column(String(16), default="kernel", server_default="kernel")
    fidelity: Mapped[str] = mapped_column(String(16), default="", server_default="")
    # runs stored before tensors were kept have [], and before tiles and grids were, neither key;
    # deferred: only exports and diffs read them, and decoding them for every view of a large run costs
    tensors: Mapped[list] = mapped_column(JSON, default=list, server_default="[]", deferred=True)
    compute_ns: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    bandwidth_ns: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    device: Mapped[int] = mapped_column(SmallInteger, default=0, server_default="0")
    # deferred: only diffs and exports read it
    config: Mapped[str] = mapped_column(Text, default="", server_default="", deferred=True)
    op_code: Mapped[str] = mapped_column(String(128), default="", server_default="")
    error_band: Mapped[float | None] = mapped_column(Float, nullable=True)
    code_line: Mapped[str] = mapped_column(Text, default="", server_default="")
    code: Mapped[str] = mapped_column(Text, default="", server_default="")

    run: Mapped[Run] = relationship(back_populates="ops")


class TimelineBlock(Base):
    """Up to BLOCK_ROWS of a run's zones, level-of-detail markers or counter samples (L1 in use,
    bandwidth in use) on one track, packed as columns, or the run's names (perfdb.blocks)."""

    __tablename__ = "timeline_blocks"
    # a window query reads one kind, the tracks asked for, then blocks by time (perfdb.lod)
    __table_args__ = (Index("ix_timeline_blocks_run_kind_track_start", "run_id", "kind", "track", "start_ns"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(8))  # zones or markers
    level: Mapped[int] = mapped_column(SmallInteger)  # the lowest level of detail of its rows
    top_level: Mapped[int] = mapped_column(SmallInteger)  # the highest
    track: Mapped[str] = mapped_column(String(64))
    start_ns: Mapped[float] = mapped_column(Float)  # its rows' earliest start
    end_ns: Mapped[float] = mapped_column(Float)  # its rows' latest end
    rows: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)  # empty for a block stored as another's
    # what its rows are, times counted from start_ns (perfdb.blocks.digest); None where a time is
    # off the clock's tick, or for blocks stored before digests were kept: never shared
    digest: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # a block of a re-run that its parent's run holds already, perhaps shifted in time: read as that
    # block's rows with shift_ns added to their times (perfdb.shared_blocks). RESTRICT: a run whose
    # blocks another run reads cannot be deleted from under it
    source_id: Mapped[int | None] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), ForeignKey("timeline_blocks.id", ondelete="RESTRICT"), index=True
    )
    shift_ns: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")


class MeasuredImport(Base):
    """Where a measured run came from: the ops perf CSV, its rows, and the rows that were bad."""

    __tablename__ = "measured_imports"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    source: Mapped[str] = mapped_column(String(1024))
    imported_at: Mapped[datetime] = mapped_column(UTCDateTime, default=_now)
    rows: Mapped[int] = mapped_column(Integer)
    matched: Mapped[int] = mapped_column(Integer)
    problems: Mapped[list] = mapped_column(JSON, default=list)  # one line per bad row
