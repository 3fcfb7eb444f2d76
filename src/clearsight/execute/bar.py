"""A stage's progress bar: items done, their rate and the time left, and what the unit in
flight is doing beside them.

Its count moves in hundredths of an item while a unit of one long item runs (a probe
conversation: :func:`clearsight.execute.progress.positions`), so it is shown rounded to two
decimals ("0.25/8 item"), and as a whole number once it is one.
"""

from __future__ import annotations

from tqdm import tqdm


class ItemBar(tqdm):  # type: ignore[misc]  # tqdm has no type hints
    """tqdm with its count shown rounded to hundredths (the sum of partial items)."""

    @property
    def format_dict(self) -> dict[str, object]:
        """tqdm's fields, a count of partial items rounded."""
        fields: dict[str, object] = super().format_dict
        n = fields["n"]
        if isinstance(n, float):
            shown = round(n, 2)
            fields["n"] = int(shown) if shown.is_integer() else shown
        return fields


def stage_bar(total: int, desc: str, enabled: bool) -> ItemBar:
    """The stage's bar, redrawn at least every second (``mininterval``) so a long unit's
    partial progress shows as it comes."""
    return ItemBar(
        total=total, desc=desc, unit="item", disable=not enabled, smoothing=0.1, mininterval=1.0
    )
