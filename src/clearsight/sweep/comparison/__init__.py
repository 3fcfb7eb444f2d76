"""Two sweep runs of one design side by side: items matched by what each asks, and the paired
figures with their differences (``clearsight compare``, through the sweep's face)."""
