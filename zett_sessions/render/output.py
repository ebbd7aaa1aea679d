"""The one output sink: data on stdout, errors/warnings/hints on stderr, a pager on a TTY.

Consoles are built per command (never at import) so Typer's test runner, which swaps
``sys.stdout``, sees everything.  Rich markup is switched off on every console: database text is
only ever rendered through ``rich.text.Text`` after ``sanitize``.  JSON keeps text as UTF-8
but escapes every control, C1, separator and bidi character, so nothing from the database can
act on a terminal while ``json.loads`` still round-trips the original text exactly.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import rich.text
from rich.console import Console, RenderableType
from rich.control import STRIP_CONTROL_CODES
from rich.text import Text

from .sanitize import JSON_UNSAFE, single_line

if TYPE_CHECKING:
    from .columns import Listing, Paint


def _strip_control_codes(text: str, _translate_table: dict[int, None] | None = None) -> str:
    """``rich.control.strip_control_codes`` (drops BEL, BS, VT, FF and CR), without the slow
    path ``str.translate`` takes for non-ASCII text: every ``Text`` runs it over its string, and
    for a 2 kB body with one emoji that cost ~150 µs (a third of ``show``'s rendering time).
    The text is returned as is when it holds none of the five characters (the usual case:
    ``sanitize`` already removed them from database text)."""
    if "\x07" in text or "\x08" in text or "\x0b" in text or "\x0c" in text or "\r" in text:
        return text.translate(_STRIP)
    return text


_STRIP: dict[int, None] = dict.fromkeys((7, 8, 11, 12, 13))
if set(STRIP_CONTROL_CODES) == set(_STRIP):  # only while rich strips exactly these
    rich.text.strip_control_codes = _strip_control_codes  # type: ignore[attr-defined]


def dumps(document: Any, *, indent: int | None = 2) -> str:
    """JSON with raw UTF-8 text, but every terminal-active character escaped as ``\\uXXXX``
    (found by a regular expression: ``str.translate`` with a table looks up every character,
    ~8 s for the 30 MB of ``usage --by session --json`` at 1M messages)."""
    text = json.dumps(
        document, ensure_ascii=False, indent=indent, allow_nan=False, default=_blob_text
    )
    return _JSON_UNSAFE_RE.sub(_escaped, text)


_JSON_UNSAFE_RE = re.compile("[" + "".join(re.escape(chr(code)) for code in JSON_UNSAFE) + "]")


def _escaped(match: re.Match[str]) -> str:
    return JSON_UNSAFE[ord(match.group())]


def _blob_text(value: object) -> str:
    """A BLOB that a damaged row holds where text or a number belongs, as its SQL literal."""
    if isinstance(value, bytes | bytearray | memoryview):
        return f"x'{bytes(value).hex()}'"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# Off a terminal, and unless $COLUMNS says otherwise, rich's 80 columns would wrap sentences
# and table rows for a log or a grep: a width nothing reaches means "never wrap".
UNWRAPPED = 100_000
# The spaces rich pads a table's last column (or a wrapped line) with, before any closing
# style codes at a line's end.
_TRAILING_SPACES = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def off_terminal_width(file: Any) -> int | None:
    """``UNWRAPPED`` for a file that is no terminal when ``$COLUMNS`` gives no width;
    ``None`` (rich decides: the terminal's width or ``$COLUMNS``) otherwise."""
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    try:
        return None if file.isatty() else UNWRAPPED
    except (AttributeError, ValueError):
        return UNWRAPPED


class _Console(Console):
    """A rich console that lets a closed pipe surface as ``BrokenPipeError`` and, off a
    terminal, writes lines without the trailing spaces rich pads tables with.

    Rich's default answer to a broken pipe is to point stdout at /dev/null and exit 1 — even
    when the pipe was a pager's stdin (quitting ``less`` early).  ``… | head`` and quitting the
    pager are normal: the error boundary (``handle_errors``) and ``Output.paged`` end them with
    exit 0.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            self.on_a_terminal = bool(self.file.isatty())
        except (AttributeError, ValueError):
            self.on_a_terminal = False

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError

    def _render_buffer(self, buffer: Any) -> str:
        rendered = super()._render_buffer(buffer)
        if self.on_a_terminal or " " not in rendered:  # (--color always forces is_terminal)
            return rendered
        return _TRAILING_SPACES.sub(r"\1", rendered)


_BATCH = 256  # lines per write of a listing


def painter(console: Console) -> Paint:
    """How ``console`` writes a run of text in its styles: between their ANSI codes on a
    colour terminal (bold and underline only with ``NO_COLOR``, as rich does), as it is
    elsewhere.  The codes are made once per combination of styles."""
    if console.color_system is None:
        return lambda text, styles: text
    from rich.console import COLOR_SYSTEMS
    from rich.style import Style

    system = COLOR_SYSTEMS[console.color_system]

    codes: dict[tuple[object, ...], tuple[str, str]] = {}

    def paint(text: str, styles: tuple[object, ...]) -> str:
        if not styles:
            return text
        found = codes.get(styles)
        if found is None:
            style = Style.combine(
                s if isinstance(s, Style) else console.get_style(str(s)) for s in styles
            )
            if console.no_color:
                style = style.without_color
            prefix, _, suffix = style.render("\0", color_system=system).partition("\0")
            found = codes[styles] = (prefix, suffix)
        return found[0] + text + found[1]

    return paint


class Output:
    """Where a command's results and messages go.

    ``color`` is ``--color``: ``auto`` styles a terminal only (``NO_COLOR`` takes the colours
    away, ``FORCE_COLOR`` styles a pipe too: rich reads it), ``always`` styles stdout wherever
    it goes (``| less -R``), ``NO_COLOR`` or not, ``never`` writes no escape sequence at all,
    ``FORCE_COLOR`` or not.  Messages on stderr follow ``auto`` unless ``never``: a colour
    asked for the data is no reason to put escape sequences in a log of the warnings.
    """

    def __init__(self, *, color: str = "auto", pager: bool = True) -> None:
        self.color_mode = color
        self.color = color == "always" or (color == "auto" and "NO_COLOR" not in os.environ)
        self.pager_allowed = pager
        self.out = self._console(sys.stdout, **self._forced())
        self.err = self._console(sys.stderr)

    def _forced(self) -> dict[str, Any]:
        """The console settings of ``--color always`` (none otherwise): a terminal's styles
        even off one, in the colours ``$TERM`` names (basic ones for a dumb or unknown one)."""
        if self.color_mode != "always":
            return {}
        dumb = os.environ.get("TERM", "").strip().lower() in {"", "dumb", "unknown"}
        return {"force_terminal": True, "color_system": "standard" if dumb else "auto"}

    def _console(self, file: Any, **extra: Any) -> Console:
        extra.setdefault("width", off_terminal_width(file))
        if self.color_mode == "never":
            extra.update(force_terminal=False, color_system=None)
        return _Console(
            file=file,
            markup=False,
            highlight=False,
            emoji=False,
            no_color=not self.color,
            **extra,
        )

    # --- data on stdout --------------------------------------------------------------------

    def print(self, *renderables: RenderableType) -> None:
        self.out.print(*renderables)

    def line(self, text: str) -> None:
        """A plain line of already-safe text (ids, numbers) without any rich processing."""
        self.write(text + "\n")

    def write(self, text: str) -> None:
        """Already-safe text as it is (no line break added, no rich processing)."""
        sys.stdout.write(text)

    def json(self, document: Any) -> None:
        sys.stdout.write(dumps(document) + "\n")
        sys.stdout.flush()

    def jsonl(self, document: Any) -> None:
        sys.stdout.write(dumps(document, indent=None) + "\n")
        sys.stdout.flush()

    # --- messages on stderr ----------------------------------------------------------------
    # Messages quote database text (session ids, titles), so each one is made safe here, once,
    # rather than by every caller: sanitized and on one line (an id holding "\nError: …" must
    # not fake a line of its own), as ``errors.fail`` does for errors.

    # soft_wrap: one message stays one line however long (a terminal wraps it for the eye;
    # a log or a grep gets it whole).
    def warn(self, message: str) -> None:
        self.err.print(
            Text("Warning: ", style="bold yellow") + Text(single_line(message)), soft_wrap=True
        )

    def hint(self, message: str) -> None:
        self.err.print(Text(single_line(message), style="dim"), soft_wrap=True)

    def note(self, message: str) -> None:
        self.err.print(Text(single_line(message)), soft_wrap=True)

    def columns_hidden(self, headers: Sequence[str], width: int) -> None:
        """Say which columns a table left out to fit ``width`` (nothing when none)."""
        if headers:
            self.hint(
                f"Hidden to fit {width} columns: {', '.join(headers)} "
                "(a wider terminal or --json shows them)"
            )

    def listing(self, listing: Listing) -> None:
        """A ``render.columns`` listing, streamed into the pager on a TTY: sized from its first
        rows, then written as the rows come, a batch at a time (the first batch at once); then
        which columns were left out to fit (nothing is printed for no rows)."""
        from .columns import SAMPLE, fit

        rows = listing.rows
        sample = list(itertools.islice(rows, SAMPLE))
        if not sample:
            return
        with self.paged() as console:
            layout = fit(
                listing.columns,
                sample,
                width=console.width,
                optional=listing.optional,
                flex_wants=listing.flex_wants,
            )
            paint = painter(console)
            file = console.file
            batch = [layout.header(paint)]
            for row in itertools.chain(sample, rows):
                batch += layout.lines(row, paint)
                if len(batch) >= _BATCH:
                    file.write("\n".join(batch) + "\n")
                    file.flush()
                    batch = []
            file.write("".join(line + "\n" for line in batch))
            file.flush()
        self.columns_hidden(layout.hidden, console.width)

    # --- paging ----------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """The width stdout's views fit (the pager's too)."""
        return self.out.width

    @property
    def is_terminal(self) -> bool:
        return sys.stdout.isatty()

    @contextlib.contextmanager
    def paged(self) -> Iterator[Console]:
        """A console that streams into ``$PAGER`` (default ``less -FRX``) on a TTY.

        ``-F`` makes less exit at once when everything fits on one screen, so short output
        behaves as if no pager were involved; off a TTY the plain stdout console is used.
        """
        command = self._pager_command()
        if command is None:
            yield self.out
            return
        env = dict(os.environ)
        env.setdefault("LESS", "FRX")
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, env=env, text=True, encoding="utf-8"
            )
        except OSError:
            yield self.out
            return
        assert process.stdin is not None
        console = self._console(
            process.stdin,
            force_terminal=True,
            color_system=self.out.color_system if self.color else None,
            width=self.out.width,
        )
        try:
            yield console
        except BrokenPipeError:
            pass  # the user quit the pager early
        finally:
            with contextlib.suppress(BrokenPipeError, OSError):
                process.stdin.close()
            process.wait()

    def _pager_command(self) -> list[str] | None:
        if not self.pager_allowed or not self.is_terminal:
            return None
        configured = os.environ.get("ZETT_SESSIONS_PAGER", os.environ.get("PAGER", ""))
        if configured.strip() in {"cat", "-"}:
            return None
        if configured.strip():
            try:
                return shlex.split(configured) or None
            except ValueError as error:  # e.g. an unclosed quote: write without a pager
                self.warn(
                    f"the pager command {configured!r} cannot be parsed ({error}); not paging"
                )
                return None
        less = shutil.which("less")
        return [less] if less else None
