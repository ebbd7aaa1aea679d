"""``show`` and ``tail``: one session's transcript, read as a stream and written as it is read.

The feature's modules, by layer (imports point one way, down this list):

* queries (return models and rows, print nothing): ``query`` (the header, the log as a stream
  of items with their flags, ``Selection``), ``annotate`` (the projection's flags decided as
  records stream by), ``follow`` (``tail -f``'s polls), ``large_values`` (values over 1 MiB read
  on their own), and the ``show --json`` fast path's ``classify`` (envelope facts read by
  SQLite) and ``flagscan`` (flags from those facts);
* renderers (pure): ``render`` (the terminal view, the header's JSON), ``markdown``
  (``--format markdown``), ``jsonrows`` (rows straight to record JSON text);
* the flow the commands call (``cli/commands/show``, ``cli/commands/tail`` parse and hand it a
  ``write.Request``): ``write`` (resolve, read, render and write each record as it arrives) and
  ``records_json`` (``show --json`` of a whole session at SQLite's pace).

Nothing is imported here: ``tail`` and a text ``show`` load only the modules they use, and
``--help`` loads none of them.
"""
