"""Capacity: how many parallel sequences a variant fits in a memory budget, and the machines a
request rate needs (`quantgate capacity`, the capacity gates, the decision's capacity section).

The feature in one package, its modules in the order of the layers they belong to
(tests/test_architecture.py places each): `_gguf_metadata.py` (a GGUF's metadata from its header, an
input of the memory model), `_shape_record.py` (a variant's memory-model record in `variants.json`,
its capacity at a budget and context, and the prediction beside its measured peak),
`_capacity_rows.py` (the decision's capacity section and machines table), `_shape_reading.py` (each
embedded variant's shape read when a run starts), `_capacity_run.py` (`quantgate capacity`),
`_capacity_checks.py` (the capacity gates), `_machine_table.py` (the machines each variant needs for
the prices' request rate). The memory model itself is a pure evaluator,
`evaluators/memory_model.py`, and the machines a rate needs `evaluators/machines.py`. This
`__init__` imports nothing.
"""
