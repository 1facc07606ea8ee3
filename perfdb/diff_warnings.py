"""What makes comparing two runs op by op suspect, said in a line each: other models or reports (names
may match other ops), other machines (the same op costs differently), a prediction against a
measurement (which one is which)."""

from __future__ import annotations

from tilescope.perfdb.diff_ops import BY_SEQUENCE, MEASURED, REPORT_REF
from tilescope.perfdb.schema import Run


def run_warnings(a: Run, b: Run, alignment: str) -> list[str]:
    """The warnings of run b against run a, their ops paired as `alignment` says."""
    found = _models(a, b, alignment) + _targets(a, b)
    said = _measured_against_simulated(a, b)
    return found + ([said] if said else [])


def _models(a: Run, b: Run, alignment: str) -> list[str]:
    if a.model_id == b.model_id:
        return []
    hashes = f"source sha256 {a.model.source_hash[:12]} vs {b.model.source_hash[:12]}"
    if a.model_ref == b.model_ref:
        return [f"the source of {a.model_ref} differs between run {a.id} and run {b.id} ({hashes})"]
    what = "reports" if a.model_ref.startswith(REPORT_REF) and b.model_ref.startswith(REPORT_REF) else "models"
    paired = "ops aligned by op code in execution order" if alignment == BY_SEQUENCE else "ops match by name only"
    return [f"different {what}: run {a.id} is {a.model_ref}, run {b.id} is {b.model_ref} ({hashes}); {paired}"]


def _targets(a: Run, b: Run) -> list[str]:
    if a.target.name != b.target.name:
        if a.kind == b.kind == MEASURED:
            return [f"measured on different chips: run {a.id} on {a.target.name}, run {b.id} on {b.target.name}"]
        return [f"different targets: run {a.id} ran on {a.target.name}, run {b.id} on {b.target.name}"]
    # runs stored before target descriptions were kept have none to compare; a measured run's
    # target is its chip, whichever description of it was current
    if MEASURED in (a.kind, b.kind) or not (a.target.description and b.target.description):
        return []
    if a.target.description_hash != b.target.description_hash:
        return [
            f"target {a.target.name} differs between run {a.id} and run {b.id} "
            f"(description sha256 {a.target.description_hash[:12]} vs {b.target.description_hash[:12]})"
        ]
    return []


def _measured_against_simulated(a: Run, b: Run) -> str | None:
    """Which run is the measurement and which the prediction, when one of each: a replay of the
    measured report, the simulation it was imported against, or a simulation of another model."""
    if (a.kind == MEASURED) == (b.kind == MEASURED):
        return None
    measured, simulated = (a, b) if a.kind == MEASURED else (b, a)
    if simulated.model_id == measured.model_id and simulated.model_ref.startswith(REPORT_REF):
        return f"run {simulated.id} is a replay of measured run {measured.id}: predicted against measured"
    if simulated.id == measured.parent_id or simulated.parent_id == measured.id:
        return (
            f"run {simulated.id} is the simulation measured run {measured.id} was imported against: "
            "predicted against measured"
        )
    return f"run {simulated.id} is simulated, run {measured.id} measured: predicted against measured"
