"""The evaluation scheduler: which variant runs which cases, where, and when it stops.

`_rounds.py` (a run: every variant on the same cases in interleaved rounds, the budget,
settling), `_tracks.py` (a variant's progress through the rounds, the pool of warm variants, its
result), `_pool.py` (a warm variant's worker process, or one in this process; how many fit in
memory), `_warm.py` (a variant loaded once, warmed up, given a round's cases), `_warm_up.py` (the
warm-up prompt every executor sends before a variant's first case), `_verification.py` (which cases
a candidate verifies against the reference's answers), `_stopping_rule.py` (when a sequential run
stops), `_executor.py` (where variants are evaluated: `VariantExecutor`, `LocalExecutor`),
`_variant.py` (one variant's whole evaluation, as a Ray task runs it), `_worker.py` (one job in a fresh
process). This `__init__` imports nothing.
"""
