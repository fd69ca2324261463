"""summary.json of an older format read as the current one, where a key moved (keys only added
since need nothing: they have defaults).

Format 14 moved a variant's figures of its task kind, which formats 7 to 13 kept flat in its entry
beside the common figures (`label_accuracy`, `chrf`, `tool_selection_accuracy`, ..., null for the
other kinds), into one sub-object, `kind_figures`, tagged with the kind.
"""

from __future__ import annotations

from typing import Any, Final

from evaluators.kinds import TASK_KINDS, kind_named

__all__ = ["KIND_FIGURES_SINCE", "upgraded_summary"]

KIND_FIGURES_SINCE: Final = 14
"""The summary.json format that moved a variant's figures of its kind into `kind_figures`."""


def _flat_keys() -> set[str]:
    """The keys older formats kept flat in a variant's entry: every kind's figures but `kind`."""
    models = [kind.figures_model for kind in TASK_KINDS.values() if kind.figures_model is not None]
    return {key for model in models for key in model.model_fields if key != "kind"}


def _nested(entry: dict[str, Any], task: Any, flat: set[str]) -> dict[str, Any]:
    """A variant's entry with its kind's flat figures in `kind_figures` (null when none was
    measured); another kind's keys are dropped when null, and kept (so refused, by name) if not."""
    kind = kind_named(task if isinstance(task, str) else None)
    own = set(kind.figures_model.model_fields) if kind.figures_model is not None else set()
    moved = {key: value for key, value in entry.items() if key in flat and key in own}
    kept = {
        key: value
        for key, value in entry.items()
        if key not in flat or (key not in own and value is not None)
    }
    measured = any(value is not None for value in moved.values())
    return {**kept, "kind_figures": {"kind": kind.name, **moved} if measured else None}


def upgraded_summary(value: dict[str, Any], version: int) -> dict[str, Any]:
    """A summary.json value of format `version` in the shape of the current format."""
    variants = value.get("variants")
    if version >= KIND_FIGURES_SINCE or not isinstance(variants, list):
        return value  # not a list: the model's validation names it
    dataset = value.get("dataset")
    task = dataset.get("task") if isinstance(dataset, dict) else None
    flat = _flat_keys()
    entries = [_nested(entry, task, flat) if isinstance(entry, dict) else entry for entry in variants]
    return {**value, "variants": entries}
