"""Reproductions of the papers' figures and tables (``geodp reproduce ...``)."""
