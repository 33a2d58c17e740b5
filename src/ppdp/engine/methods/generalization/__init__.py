"""Generalization with suppression (full-domain global recoding): the release method
(method.py), the search problem over the lattice of generalization levels (problem.py), the
evaluators that score a batch of solutions in memory or in the database (evaluators/), the
optimizers (optimizers/: the certified lattice search, Flash, ID-DGA, HAEF, islands), and the
utility metrics reported with a release (metrics.py)."""
