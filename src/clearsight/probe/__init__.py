"""Active reasoning through a noisy VLM sensor (docs/methods.md §6).

A text-only reasoner never sees the image: it asks a sensor (any VLM backend, K samples per
query, one realised, consistency u shown as "(u/K)") and commits to a lettered option.

Modules: :mod:`~clearsight.probe.instances` (the questions), :mod:`~clearsight.probe.sensor`
(the sensor and its replies), :mod:`~clearsight.probe.judges` (semantic equivalence behind u),
:mod:`~clearsight.probe.transcript` (conversations as stored records),
:mod:`~clearsight.probe.reasoner` (the strategies and the loop),
:mod:`~clearsight.probe.analysis` (accuracy, cross-run ECE, bins, ablation, belief probe, query
types) and :mod:`~clearsight.probe.build` (the two-stage benchmark filter). The protocol that
plans and runs items is :mod:`clearsight.probe.protocol`; every item's typed spec is in
:mod:`~clearsight.probe.specs`.
"""
