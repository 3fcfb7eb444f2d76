"""The blind reasoner: its loop of turns, the texts it reads, how its output is parsed, and the
Uncertainty-of-Thoughts search a strategy may run each turn."""
