"""The category prior of a scene set and prior-matched distractor draws.

docs/methods.md §3 asks for distractors "drawn to match the category prior (distractor
frequencies follow the category frequencies of the scene set, so guessing from the prior alone
scores chance)". Two schemes are offered, because the obvious one does not deliver that
promise when the prior is skewed:

``"proportional"`` (default)
    Successive sampling: draw ``n`` distractors one after another, without replacement, from the
    prior's other categories, each draw with probability proportional to the prior frequency
    among those not yet drawn. For a uniform prior this is a uniform draw and a prior guesser
    scores exactly chance. For a skewed prior it is *not* exchangeable: given the option set,
    the more frequent categories are more likely to be the true one (two options {t, d}:
    ``P(true = t | {t, d}) ∝ 1 / (1 - p_t)``), so a guesser that picks the most frequent option
    scores above chance, and a frequent category fills fewer distractor slots than its prior share
    (it is often the true answer, and then it cannot be a distractor).

``"exchangeable"``
    Conditional Poisson sampling with inclusion probabilities ``pi_c = k p_c`` for ``k`` options
    (true + ``n`` distractors). Weights ``w`` are fitted once per prior so that a size-``k`` set
    drawn with ``P(S) ∝ prod_{c in S} w_c`` contains category c with probability ``k p_c``; the
    distractors for true category t are then a conditional Poisson draw of size ``n`` from the
    other categories with the same weights, ``P(D | t) ∝ prod_{d in D} w_d``. Then
    ``P(S, t) = p_t q(S) / pi_t = q(S) / k``: given the option set every member is equally likely
    to be the true one, so *any* rule that sees only the options scores exactly ``1/k``, and each
    category's share of distractor slots equals its prior frequency exactly. It exists only when
    every ``p_c <= 1/k`` (a category with ``p_c > 1/k`` is the true answer of more than a ``1/k``
    share of the items it could appear in); otherwise it raises InputError.

Both draw through an explicit ``numpy.random.Generator`` with one ``rng.random()`` per decision,
over the categories in COCO id order, so a question is a pure function of its arguments and does
not depend on the order in which a prior mapping was built.

Fewer categories than needed (scheme ``"proportional"``): when the prior has fewer than ``n``
other categories, all of them are used and the rest are filled uniformly without replacement from
the COCO categories of the true category's super-category that are not yet used, then from any
unused COCO category. Such fillers have prior 0, so they are never the true answer of any item;
a prior guesser profits from that, which is why a scene set should have at least 4 categories.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final, Literal, get_args

import numpy as np
import numpy.typing as npt

from clearsight.scenes.categories import CATEGORY_NAMES, SUPERCATEGORY
from clearsight.validate import InputError

#: How distractors follow the prior; see the module docstring.
DistractorScheme = Literal["proportional", "exchangeable"]
DISTRACTOR_SCHEMES: Final[tuple[DistractorScheme, ...]] = get_args(DistractorScheme)

#: COCO id order of every category name, the canonical order of every draw.
_COCO_RANK: Final[dict[str, int]] = {name: i for i, name in enumerate(CATEGORY_NAMES)}


def check_category(category: object, name: str = "category") -> str:
    """Return ``category`` if it is one of the 80 COCO category names, else raise InputError."""
    if not isinstance(category, str) or category not in SUPERCATEGORY:
        raise InputError(
            f"{name} {category!r} is not a COCO category name (e.g. 'car', 'traffic light')"
        )
    return category


def check_rng(rng: object) -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator`` (no global random state is used)."""
    if not isinstance(rng, np.random.Generator):
        raise InputError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def category_prior(categories: Sequence[str]) -> dict[str, float]:
    """Relative frequency of each target category in a scene set (one entry per target).

    ``prior[c] = count(c) / len(categories)``; keys in COCO id order; values sum to 1.
    """
    if isinstance(categories, str):
        raise InputError("categories must be a sequence of category names, not one string")
    if len(categories) == 0:
        raise InputError("cannot build a category prior from an empty list of targets")
    for i, c in enumerate(categories):
        check_category(c, f"categories[{i}]")
    counts = Counter(categories)
    n = len(categories)
    return {c: counts[c] / n for c in sorted(counts, key=_COCO_RANK.__getitem__)}


def check_prior(prior: Mapping[str, float]) -> dict[str, float]:
    """Validate a prior and return it normalised to sum 1, keys in COCO id order.

    A prior maps COCO category names to finite frequencies > 0 (counts or shares; a category
    with frequency 0 is not in the scene set and is left out rather than listed).
    """
    if not isinstance(prior, Mapping):
        raise InputError(f"prior must be a mapping of category -> frequency, got {prior!r}")
    if not prior:
        raise InputError("prior is empty: it needs the frequency of at least one category")
    values: dict[str, float] = {}
    for c, v in prior.items():
        check_category(c, "prior category")
        if isinstance(v, bool) or not isinstance(v, int | float | np.floating | np.integer):
            raise InputError(f"prior[{c!r}] must be a number, got {v!r}")
        if not math.isfinite(float(v)) or float(v) <= 0:
            raise InputError(f"prior[{c!r}] must be finite and > 0, got {v!r}")
        values[c] = float(v)
    total = math.fsum(values.values())
    return {c: values[c] / total for c in sorted(values, key=_COCO_RANK.__getitem__)}


def _successive(
    names: Sequence[str], weights: npt.NDArray[np.float64], n: int, rng: np.random.Generator
) -> list[str]:
    """Draw ``n`` of ``names`` without replacement, each draw proportional to remaining weight."""
    w = weights.astype(np.float64, copy=True)
    out: list[str] = []
    for _ in range(n):
        cdf = np.cumsum(w)
        u = rng.random() * cdf[-1]
        i = min(int(np.searchsorted(cdf, u, side="right")), len(w) - 1)
        while w[i] == 0.0:  # u landed on the upper edge of a removed item: step back
            i -= 1
        out.append(names[i])
        w[i] = 0.0
    return out


def _uniform(pool: Sequence[str], n: int, rng: np.random.Generator) -> list[str]:
    """Draw ``min(n, len(pool))`` of ``pool`` uniformly without replacement."""
    return _successive(pool, np.ones(len(pool)), min(n, len(pool)), rng)


def _fill(true_category: str, used: Sequence[str], n: int, rng: np.random.Generator) -> list[str]:
    """``n`` filler categories: same super-category first, then any COCO category, uniformly."""
    taken = {true_category, *used}
    sup = SUPERCATEGORY[true_category]
    same = [c for c in CATEGORY_NAMES if SUPERCATEGORY[c] == sup and c not in taken]
    out = _uniform(same, n, rng)
    taken.update(out)
    rest = [c for c in CATEGORY_NAMES if c not in taken]
    return out + _uniform(rest, n - len(out), rng)


def _elementary(w: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Table ``E[i, j] = e_j(w[i:])`` of elementary symmetric polynomials of the tail sums."""
    E = np.zeros((len(w) + 1, k + 1))
    E[:, 0] = 1.0
    for i in range(len(w) - 1, -1, -1):
        E[i, 1:] = E[i + 1, 1:] + w[i] * E[i + 1, :-1]
    return E


def _esp(w: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Elementary symmetric polynomials ``e_0..e_k`` of the last axis of ``w`` (batched).

    Sums of products of non-negative weights only (a removed item has weight 0), so there is no
    cancellation, unlike deleting an item by subtraction.
    """
    e = np.zeros((*w.shape[:-1], k + 1))
    e[..., 0] = 1.0
    for i in range(w.shape[-1]):
        e[..., 1:] = e[..., 1:] + w[..., i, None] * e[..., :-1]
    return e


def cps_inclusion(w: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Inclusion probabilities of conditional Poisson sampling of size ``k`` with weights ``w``.

    ``P(S) = prod_{c in S} w_c / e_k(w)`` over sets of size k, so
    ``pi_c = w_c e_{k-1}(w without c) / e_k(w)``.
    """
    without = np.where(np.eye(len(w), dtype=bool), 0.0, w[None, :])
    return np.asarray(w * _esp(without, k - 1)[:, k - 1] / _esp(w, k)[k], dtype=np.float64)


def cps_joint_inclusion(w: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Matrix of ``pi_cd = w_c w_d e_{k-2}(w without c, d) / e_k(w)``, diagonal ``pi_c``."""
    n = len(w)
    joint = np.zeros((n, n))
    if k >= 2:
        idx = np.arange(n)
        item = idx[None, None, :]
        removed = (item == idx[:, None, None]) | (item == idx[None, :, None])
        without = np.where(removed, 0.0, w[None, None, :])  # [c, d, item]: w without c and d
        joint = np.outer(w, w) * _esp(without, k - 2)[..., k - 2] / _esp(w, k)[k]
    np.fill_diagonal(joint, cps_inclusion(w, k))
    return np.asarray(joint, dtype=np.float64)


@functools.lru_cache(maxsize=64)
def _cps_weights(p: tuple[float, ...], k: int) -> tuple[float, ...]:
    """Weights whose size-``k`` conditional Poisson design has inclusion probabilities ``k p``.

    Categories with ``k p_c = 1`` are certain (weight ``inf``); the log-weights of the rest are
    fitted by damped Newton steps on ``pi(w) = k p`` (Jacobian: the covariance
    ``pi_cd - pi_c pi_d`` of the inclusion indicators, solved by least squares because the set
    size is fixed) to an absolute error below 1e-10 (typically 1e-15), from the start
    ``w = pi / (1 - pi)``.
    """
    target = k * np.asarray(p, dtype=np.float64)
    certain = target >= 1.0 - 1e-12
    free = ~certain
    k_free = k - int(certain.sum())
    w = np.full(len(p), np.inf)
    if k_free == 0:
        return tuple(float(x) for x in w)
    t = target[free]
    logw = np.log(t / (1.0 - np.minimum(t, 1.0 - 1e-9)))

    def error(lw: npt.NDArray[np.float64]) -> tuple[float, npt.NDArray[np.float64]]:
        wf = np.exp(lw - lw.max())
        with np.errstate(all="ignore"):  # an overlong trial step may underflow every weight
            e = float(np.abs(cps_inclusion(wf, k_free) - t).max())
        return (e if math.isfinite(e) else math.inf), wf

    err, wf = error(logw)
    for _ in range(200):
        if err < 1e-13:
            break
        joint = cps_joint_inclusion(wf, k_free)
        pi = np.diag(joint).copy()
        jac = joint - np.outer(pi, pi)
        np.fill_diagonal(jac, pi * (1.0 - pi))
        step = np.linalg.lstsq(jac, t - pi, rcond=None)[0]
        for scale in 0.5 ** np.arange(20):
            new_err, new_wf = error(logw + scale * step)
            if new_err < err:
                break
        else:  # no step improves: at the floating-point floor
            break
        logw, err, wf = logw + scale * step, new_err, new_wf
    if err > 1e-10:  # pragma: no cover - Newton converges for every feasible target
        raise InputError(f"exchangeable weights did not converge (error {err:.2g})")
    w[free] = wf
    return tuple(float(x) for x in w)


def _cps_draw(
    names: Sequence[str], weights: npt.NDArray[np.float64], n: int, rng: np.random.Generator
) -> list[str]:
    """Draw a set of ``n`` names with ``P(D) ∝ prod_{d in D} w_d`` (sequential, one uniform each).

    Walk the names in order; include name i with probability ``w_i e_{r-1}(w[i+1:]) /
    e_r(w[i:])`` while ``r`` are still needed.
    """
    E = _elementary(weights, n)
    out: list[str] = []
    r = n
    for i, name in enumerate(names):
        if r == 0:
            break
        if rng.random() * E[i, r] < weights[i] * E[i + 1, r - 1]:
            out.append(name)
            r -= 1
    return out


def _exchangeable(
    true_category: str, prior: Mapping[str, float], n: int, rng: np.random.Generator
) -> list[str]:
    """Distractors for scheme "exchangeable" (see the module docstring)."""
    k = n + 1
    names = list(prior)
    p = tuple(prior.values())
    worst = max(names, key=prior.__getitem__)
    if prior[worst] > 1.0 / k + 1e-12:
        raise InputError(
            f"exchangeable distractors for {k} options need every category's prior <= 1/{k}; "
            f"{worst!r} has {prior[worst]:.4g} (use scheme='proportional' or a more balanced "
            f"scene set)"
        )
    w = dict(zip(names, _cps_weights(p, k), strict=True))
    certain = [c for c in names if math.isinf(w[c]) and c != true_category]
    free = [c for c in names if not math.isinf(w[c]) and c != true_category]
    weights = np.array([w[c] for c in free], dtype=np.float64)
    return certain + _cps_draw(free, weights, n - len(certain), rng)


def draw_distractors(
    true_category: str,
    prior: Mapping[str, float],
    n: int,
    rng: np.random.Generator,
    scheme: DistractorScheme = "proportional",
) -> list[str]:
    """``n`` distinct distractor categories for ``true_category``, matched to ``prior``.

    ``prior`` is validated and normalised (see ``check_prior``); ``true_category`` must be one of
    its categories. The returned order is the draw order, not the option order.
    """
    check_category(true_category, "true category")
    norm = check_prior(prior)
    check_rng(rng)
    if true_category not in norm:
        raise InputError(
            f"true category {true_category!r} is not in the prior ({', '.join(norm)}); the prior "
            f"is the distribution of the scene set's targets, which include this one"
        )
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n < len(CATEGORY_NAMES):
        raise InputError(f"number of distractors must be an int in 1..79, got {n!r}")
    if scheme == "exchangeable":
        return _exchangeable(true_category, norm, n, rng)
    if scheme != "proportional":
        raise InputError(f"scheme must be one of {DISTRACTOR_SCHEMES}, got {scheme!r}")
    others = [c for c in norm if c != true_category]
    weights = np.array([norm[c] for c in others], dtype=np.float64)
    drawn = _successive(others, weights, min(n, len(others)), rng)
    return drawn + _fill(true_category, drawn, n - len(drawn), rng)
