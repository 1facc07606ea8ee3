"""Per-op tuning requests: read and write the formats users exchange, and check them against a graph."""

from tilescope.overrides.spec import format_item, format_value, parse_item
from tilescope.overrides.validate import Problems, Report, check_op_names, check_overrides, validate

__all__ = [
    "Problems",
    "Report",
    "check_op_names",
    "check_overrides",
    "format_item",
    "format_value",
    "parse_item",
    "validate",
]
