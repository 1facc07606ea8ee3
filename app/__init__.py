"""The tilescope web app and command line."""
