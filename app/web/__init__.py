"""The web app: the gunicorn server and its limits, the page frame, its panels and callbacks, and
the background jobs that compile and re-run. It translates between Dash and app.workbench."""
