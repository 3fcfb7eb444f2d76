"""The probe's report page, composed from its analysis: :mod:`~clearsight.probe.page.report`
(the three files, tables and figures), its headline (:mod:`~clearsight.probe.page.headline`)
and its example conversations (:mod:`~clearsight.probe.page.examples`), on the blocks every
page shares (:mod:`clearsight.pages`).
"""
