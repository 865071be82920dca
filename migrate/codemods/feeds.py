"""Placeholders, ``feed_dict`` and training ops -> functions of the fed values.

(Work in progress: see issue 5.)
"""

from __future__ import annotations

from migrate.codemods._base import KindMixin, TapeshiftCodemod


class FeedsToFunctions(KindMixin, TapeshiftCodemod):
    DESCRIPTION = "Turn fed graphs and training ops into functions of the fed values."
    RULE = "feeds"
