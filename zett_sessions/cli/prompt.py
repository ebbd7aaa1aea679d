"""Questions a destructive command asks on stderr, and the answers read from stdin.

A "no" (or Enter, or the end of stdin) is an answer, not an error: the command says nothing
happened and exits 0.  Ctrl-C at the question is an interruption like anywhere else: exit 130,
quietly (Typer's own ``confirm`` turns it into ``Aborted!`` and exit 1).
"""

from __future__ import annotations

import sys

import typer

from .exit_codes import ExitCode


def _answer(question: str) -> str | None:
    """The line typed after ``question`` (stripped); ``None`` at the end of stdin.

    Ctrl-C from the moment the question shows is an interruption at the question (exit 130),
    also when it lands before the read has started."""
    try:
        sys.stderr.write(question)
        sys.stderr.flush()
        line = sys.stdin.readline()
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        sys.stderr.flush()
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    if not line:
        sys.stderr.write("\n")
        return None
    return line.strip()


def ask(question: str) -> bool:
    """``question [y/N]``: only ``y``/``yes`` (any case) is a yes."""
    answer = _answer(f"{question} [y/N]: ")
    return answer is not None and answer.lower() in {"y", "yes"}


def ask_exact(question: str, expected: str) -> bool:
    """``question`` answered by typing ``expected`` exactly (a number, say): anything else,
    ``y`` included, is a no, and a typed answer that is not ``expected`` is told what was
    (someone who typed ``y`` learns why nothing happened)."""
    answer = _answer(f"{question}: ")
    if answer and answer != expected:
        from ..render.sanitize import single_line

        sys.stderr.write(f"The answer was {single_line(answer)!r}, not {expected}.\n")
    return answer == expected
