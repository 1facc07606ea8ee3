"""Profiles measured on hardware: tt-metal's ops perf reports and Chrome / Perfetto traces, read into
typed records (report.py) that the app stores as measured runs and the replay builds IR from."""
