"""What every report page and the card are made of, whatever protocol they show: the page's
building blocks and skeleton (:mod:`~clearsight.pages.html`), the one layout of a report's three
files and the :class:`~clearsight.pages.output.Appendix` a report adds to a protocol's page
(:mod:`~clearsight.pages.output`), the cost section (:mod:`~clearsight.pages.cost`), the
headline's layout (:mod:`~clearsight.pages.headline`) and the drawing helpers and risk-coverage
figures (:mod:`~clearsight.pages.plots`).

A low layer: each protocol composes its own page from these in its own package (``page/``), and
:mod:`clearsight.report` reaches a run's page through its protocol's face
(:mod:`clearsight.faces`), so neither imports the other.
"""
