"""The domain's one error style for steps that may fail: validators' InvalidValue as a Result, and steps in turn."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TypeVar

from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, InvalidValue

T = TypeVar("T")
U = TypeVar("U")


def validated(build: Callable[[], T]) -> Result[T, DomainError]:
    """Run a constructor or check whose validators may raise InvalidValue: its value, or the error as a Failure."""
    try:
        return Success(build())
    except InvalidValue as error:
        return Failure(error.to_error())


def in_turn(items: Iterable[T], step: Callable[[T], Result[U, DomainError]]) -> Result[list[U], DomainError]:
    """Run `step` on each item in order and stop at the first Failure: every value, or that Failure.

    Unlike `Fold.collect` over a list of results, no step runs after one has failed (writes stop there).
    """
    done: Result[list[U], DomainError] = Success([])
    for item in items:
        done = done.bind(partial(_then, step, item))
    return done


def _then(step: Callable[[T], Result[U, DomainError]], item: T, so_far: list[U]) -> Result[list[U], DomainError]:
    return step(item).map(lambda value: [*so_far, value])
