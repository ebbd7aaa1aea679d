"""A group of options that several commands share, handed to each as one frozen dataclass.

``option_group(placeholder, group, declared)`` is a decorator: it puts the options
``declared`` (a parameter name, a field of ``group``, → its ``Annotated`` declaration) where
the command's ``placeholder`` parameter stands, in that order (so ``--help`` lists them
there), with ``group()``'s field values as their defaults, and calls the command with
``placeholder=group(**their values)``.  The session filters (``filters.filter_options``), the
transcript view of show and tail (``commands.show.view_options``) and ``--format`` with ``--json``
(``options.output_options``) are such groups.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

R = TypeVar("R")


def option_group(
    placeholder: str, group: Callable[..., object], declared: Mapping[str, Any]
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options ``declared`` in place of its parameter ``placeholder``; it is
    called with ``placeholder=group(...)`` of their values (a dataclass whose fields have
    defaults).  Put it under ``@handle_errors``, so that what the command raises is still
    ``Error: …``."""
    defaults = group()

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command, eval_str=True)
        stand_in = signature.parameters[placeholder]
        parameters: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            if parameter is not stand_in:
                parameters.append(parameter)
                continue
            parameters += [
                parameter.replace(name=name, annotation=kind, default=getattr(defaults, name))
                for name, kind in declared.items()
            ]

        @functools.wraps(command)
        def with_group(*args: Any, **kwargs: Any) -> R:
            given = {name: kwargs.pop(name) for name in declared if name in kwargs}
            return command(*args, **{placeholder: group(**given)}, **kwargs)

        with_group.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_group.__annotations__ = {p.name: p.annotation for p in parameters} | {
            "return": signature.return_annotation
        }
        return with_group

    return decorate
