"""What every report page and the card are made of, whatever protocol they show: the page's
building blocks and skeleton (:mod:`~clearsight.pages.html`), the one layout of a report's three
files (:mod:`~clearsight.pages.output`) and the cost section (:mod:`~clearsight.pages.cost`).

A low layer: protocol packages compose their own pages from these, and :mod:`clearsight.report`
reaches a run's page through its protocol's face (:mod:`clearsight.faces`), so neither imports
the other.
"""
