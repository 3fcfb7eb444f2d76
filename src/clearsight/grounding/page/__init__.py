"""Trajectory grounding's report page, composed from its analysis:
:mod:`~clearsight.grounding.page.report` (the three files), its figures
(:mod:`~clearsight.grounding.page.figures`) and headline
(:mod:`~clearsight.grounding.page.headline`), on the blocks every page shares
(:mod:`clearsight.pages`).
"""
