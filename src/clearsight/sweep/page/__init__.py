"""The sweep's report page, composed from its analysis (nothing read from the run):
:mod:`~clearsight.sweep.page.report` (the three files, summary.md), its sections
(:mod:`~clearsight.sweep.page.sections`), the qualitative examples
(:mod:`~clearsight.sweep.page.examples`), the guard's section (:mod:`~clearsight.sweep.page.guard`),
the headline (:mod:`~clearsight.sweep.page.headline`), labels (:mod:`~clearsight.sweep.page.labels`)
and figures (:mod:`~clearsight.sweep.page.plots`), on the blocks every page shares
(:mod:`clearsight.pages`).
"""
