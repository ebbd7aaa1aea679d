"""The ``zett-sessions`` command line (Typer + rich); thin layer over queries and renderers."""
