"""The tracing database: every run, its per-op timings and its timeline zones (SQLite or PostgreSQL)."""
