"""Per-op tuning requests: read and write the formats users exchange, and check them against a graph."""

from .spec import format_item, format_value, parse_item
from .validate import Report, check_op_names, validate

__all__ = ["Report", "check_op_names", "format_item", "format_value", "parse_item", "validate"]
