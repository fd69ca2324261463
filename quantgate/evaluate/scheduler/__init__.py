"""The evaluation scheduler: which variant runs which cases, where, and when it stops.

`rounds.py` (the local run: every variant on the same cases in interleaved rounds, the budget,
settling), `tracks.py` (a variant's progress through the rounds, the pool of warm variants, its
result), `pool.py` (a warm variant's worker process, or one in this process; how many fit in
memory), `warm.py` (a variant loaded once, warmed up, given a round's cases), `warm_up.py` (the
warm-up prompt every executor sends before a variant's first case), `verification.py` (which cases
a candidate verifies against the reference's answers), `stopping_rule.py` (when a sequential run
stops), `executor.py` (where variants are evaluated: `VariantExecutor`, `LocalExecutor`),
`variant.py` (one variant's whole evaluation, as a Ray task runs it), `worker.py` (one job in a fresh
process). This `__init__` imports nothing.
"""
