"""Trajectory grounding of verbalized confidence (docs/methods.md §5).

Modules, in the order of the method:

* :mod:`~clearsight.grounding.problems` — :class:`Problem` and loaders for local copies of the
  paper's benchmarks; :mod:`~clearsight.grounding.generator` — bundled verifiable problems.
* :mod:`~clearsight.grounding.trajectories` — the template (observation, reasoning, answer,
  confidence 0-10), generation, segmentation into vision / reasoning / answer spans.
* :mod:`~clearsight.grounding.elicit` — the 11-way numeral distribution at the confidence slot
  from ONE forward pass, with or without hidden (attention-masked) rationale tokens.
* :mod:`~clearsight.grounding.tgs` — TGS-self and the masking curve; TGS-pair.
* :mod:`~clearsight.grounding.bench` — TGS-Bench pairs (answer by rule, vision and reasoning by
  single-error injection, checked).
* :mod:`~clearsight.grounding.variation`, :mod:`~clearsight.grounding.hesitation` — content
  variation (JSD) and hesitation analysis.

Nothing here imports torch at import time; the model-facing functions take a loaded backend.
"""
