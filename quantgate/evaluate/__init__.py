"""Evaluating variants: the run over a dataset, the token-fidelity step, worker processes, measurement."""
