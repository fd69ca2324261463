"""The project's error classes: every one derives from `QuantgateError` (a new one without it fails
here), and each still is the built-in exception its callers catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

from evaluators.errors import MissingInputError, QuantgateError, UsageError
from quantgate.evaluate._signals import Interrupted

PACKAGES = ("evaluators", "graphs", "quantgate")
NOT_ERRORS: set[type[BaseException]] = {Interrupted}
"""Exceptions that are no error: Ctrl-C or SIGTERM, which `main` turns into exit 130 or 143."""


def _modules() -> list[ModuleType]:
    modules = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        found = pkgutil.walk_packages(package.__path__, f"{name}.")
        modules += [
            package,
            *(importlib.import_module(m.name) for m in found if m.name != "quantgate.__main__"),
        ]
    return modules


def _without_base(modules: list[ModuleType]) -> list[str]:
    """The exception classes defined in `modules` that do not derive from `QuantgateError`."""
    return [
        f"{module.__name__}.{name}"
        for module in modules
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and not issubclass(value, QuantgateError)
        and value not in NOT_ERRORS
    ]


def test_every_error_class_of_the_project_derives_from_quantgate_error() -> None:
    modules = _modules()
    assert len(modules) > 100  # the walk found the packages' modules
    assert _without_base(modules) == [], "derive from UsageError or QuantgateError (evaluators/errors.py)"


def test_the_check_finds_an_error_class_without_the_base() -> None:
    module = ModuleType("quantgate.somewhere")
    for name, base in (("StrayError", ValueError), ("GoodError", UsageError)):
        setattr(module, name, type(name, (base,), {"__module__": module.__name__}))
    module.UsageError = UsageError  # type: ignore[attr-defined]  # imported, not defined there
    assert _without_base([module]) == ["quantgate.somewhere.StrayError"]


@pytest.mark.parametrize(
    ("error", "builtin"),
    [(UsageError, ValueError), (MissingInputError, FileNotFoundError), (MissingInputError, UsageError)],
)
def test_each_base_is_still_the_builtin_its_callers_catch(error: type[Exception], builtin: type) -> None:
    assert issubclass(error, builtin)
    assert issubclass(error, QuantgateError)
