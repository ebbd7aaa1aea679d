"""Child-process entry point: check one range of sessions, answer with the pickled result.

Started by ``runner`` as ``python -P -m zett_sessions.verify.worker`` (never through
``multiprocessing``, so the caller's main module is not imported again).  Reads the pickled
keyword arguments of ``runner.check_range`` on stdin; writes ``("ok", result)`` or
``("error", exception)`` pickled on stdout.  Its last argument is the lifeline
(``child.watch_parent``): it exits as soon as the parent is gone; ``--progress FD`` before it
asks for the raw rows scanned, reported on that descriptor (``child.report_progress``).
"""

from __future__ import annotations

import pickle
import sys


def main() -> None:
    from ..child import report_progress, watch_parent

    watch_parent(int(sys.argv[-1]))
    try:
        from .runner import check_range

        arguments = pickle.load(sys.stdin.buffer)
        answer: tuple[str, object] = (
            "ok",
            check_range(**arguments, counted=report_progress(sys.argv)),
        )
    except Exception as error:  # the parent re-raises it
        answer = ("error", error)
    pickle.dump(answer, sys.stdout.buffer)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
