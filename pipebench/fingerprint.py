"""The one fingerprint: the sha256 of an object's JSON with sorted keys, in hex, cut to a stated length.

Equal objects give equal fingerprints in any process. Two lengths are in use, both stored in results:
trial and configuration ids are 12 hex digits (short enough to name on a command line; `configuration_id`
is documented so), and the experiment, data and host fingerprints 16. A pipeline's fingerprint is the
whole sha256 of the compact JSON form (`compact=True`), as results have stored it since their first
version; changing any of these would change what earlier runs stored.
"""
from __future__ import annotations

import hashlib
import json

#: Trial and configuration ids.
ID_HEX_DIGITS = 12
#: Experiment, data and host fingerprints.
HEX_DIGITS = 16


def fingerprint(obj: object, hex_digits: int = HEX_DIGITS, compact: bool = False) -> str:
    """Give the first `hex_digits` hex digits of the sha256 of `obj`'s JSON with sorted keys (compact: no spaces)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":") if compact else None)
    return hashlib.sha256(text.encode()).hexdigest()[:hex_digits]
