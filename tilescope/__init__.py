"""tilescope: compile, simulate, trace and diff ML models for AI accelerators."""
