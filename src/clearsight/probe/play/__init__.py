"""The probe played by people: ``clearsight serve`` hosts human sessions in which a person plays
the blind reasoner (:class:`~clearsight.probe.play.session.HumanPlay`, the probe face's
``serve``), their pages (:mod:`~clearsight.probe.play.pages`), and how a conversation looks on
a page (:mod:`~clearsight.probe.play.views`, also the operator's record page's conversation).
"""
