"""``python -m zett_sessions`` runs the command line."""

from zett_sessions.cli.main import run

run()
