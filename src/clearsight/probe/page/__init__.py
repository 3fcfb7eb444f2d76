"""The probe's report page, composed from its analysis: :mod:`~clearsight.probe.page.report`
(the three files, tables and figures) and its headline (:mod:`~clearsight.probe.page.headline`),
on the blocks every page shares (:mod:`clearsight.pages`).
"""
