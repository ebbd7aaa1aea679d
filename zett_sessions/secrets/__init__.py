"""``secrets``: credentials stored in transcripts, found without ever being shown.

``scan.scan(db, query, progress)`` streams the ``Finding``s of the sessions in scope (named
ones, ``list``'s filters, or the whole database), a slice of sessions at a time; each finding
names the session, the raw row's sequence (``None`` for the session's title and agent name,
and for snapshots, which give their version), the field, the kind of secret and a fingerprint
(``models.fingerprint``: a short keyed hash).  The value itself never leaves this package:
``redact`` replaces each one by a placeholder naming its kind and fingerprint, for ``show
--redact``.  What counts as a secret is ``detectors``: a curated table of credential shapes
plus a user's own patterns.
"""

from __future__ import annotations

from .detectors import Detectors
from .models import Field, Finding, SecretsProgress
from .scan import SecretsQuery, scan

__all__ = ["Detectors", "Field", "Finding", "SecretsProgress", "SecretsQuery", "scan"]
