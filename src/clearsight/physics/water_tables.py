"""Published absorption spectra of pure water, shipped as data files.

``pope_fry_1997``: Pope & Fry (1997), Appl. Opt. 36(33), 380-727.5 nm at 2.5 nm.
``smith_baker_1981``: Smith & Baker (1981), Appl. Opt. 20(2), 200-800 nm at 10 nm.
Each CSV names its source and unit conversion in its header comments; values are in 1/m.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError

WaterTable = Literal["pope_fry_1997", "smith_baker_1981"]
WATER_TABLES: tuple[WaterTable, ...] = ("pope_fry_1997", "smith_baker_1981")


@functools.cache
def load_table(table: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Return (wavelengths in nm, absorption in 1/m) of a named table."""
    if table not in WATER_TABLES:
        raise InputError(f"unknown water absorption table {table!r}; known: {WATER_TABLES}")
    text = resources.files("clearsight.physics").joinpath(f"data/{table}.csv").read_text()
    rows = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    data = np.array([[float(v) for v in ln.split(",")] for ln in rows[1:]], dtype=np.float64)
    return data[:, 0], data[:, 1]


def absorption(
    wavelengths_nm: npt.ArrayLike, table: str = "pope_fry_1997"
) -> npt.NDArray[np.float64]:
    """Pure-water absorption a(lambda) in 1/m, linear between tabulated wavelengths.

    Tabulated wavelengths return the published value exactly; wavelengths outside the table's
    range are an error rather than an extrapolation.
    """
    wl, a = load_table(table)
    q = np.atleast_1d(np.asarray(wavelengths_nm, dtype=np.float64))
    if not np.isfinite(q).all() or (q < wl[0]).any() or (q > wl[-1]).any():
        raise InputError(
            f"wavelengths {q.tolist()} nm outside the {table} table ({wl[0]:g}-{wl[-1]:g} nm)"
        )
    return np.interp(q, wl, a)
