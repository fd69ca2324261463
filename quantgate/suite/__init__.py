"""Suites (`run --suite`, `decide` of a suite): several datasets judged with the same variants.

The feature in one package, its modules in the order of the layers they belong to
(tests/test_architecture.py places each): `_suite_file.py` (the suite file a user writes, an
input), `_suite_records.py` (the run directory's `suite.json` and `suite_decision.json`),
`_suite_run.py` (each task's run into `tasks/<task>/`), `_suite_grid.py` (the task x variant grid
and `suite_decision.md`), `_suite_decision.py` (a suite's decision), `_suite_report.py` (its HTML
report and a task for the notebook). This `__init__` imports nothing, so that reading a suite file
does not load the run, the decision or the report.
"""
