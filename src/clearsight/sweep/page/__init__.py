"""The sweep's report page, composed from its analysis alone (nothing read from the run):
:mod:`~clearsight.sweep.page.report` (the three files, summary.md), its sections
(:mod:`~clearsight.sweep.page.sections`, the guard's included; the tables of
:mod:`~clearsight.sweep.page.tables` and :mod:`~clearsight.sweep.page.confidence`, the ImageNet-C
section :mod:`~clearsight.sweep.page.imagenet`, the qualitative examples
:mod:`~clearsight.sweep.page.examples`), the headline (:mod:`~clearsight.sweep.page.headline`),
labels (:mod:`~clearsight.sweep.page.labels`) and figures (:mod:`~clearsight.sweep.page.plots`,
:mod:`~clearsight.sweep.page.figures`, the small accuracy ones
:mod:`~clearsight.sweep.page.accuracy`). The sections are lists of parts — markup and blocks
of :mod:`clearsight.pages` — composed into one page that :mod:`clearsight.pages.output`
renders and writes once.
"""
