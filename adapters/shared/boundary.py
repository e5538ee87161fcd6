"""The adapters' one error style: plain Python that raises inside, turned into a Result once per port method."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError

T = TypeVar("T")

Translate = Callable[[Exception], DomainError | None]  # a library's exception as a DomainError; None: not ours


class Abort(Exception):
    """A DomainError raised inside an adapter and given back as a Failure where its port method returns."""

    def __init__(self, error: DomainError) -> None:
        super().__init__(error.message)
        self.error = error


def abort_if(error: DomainError | None) -> None:
    """Abort with the error a check found, if it found one."""
    if error is not None:
        raise Abort(error)


def value_of(result: Result[T, DomainError]) -> T:
    """The value of a Result met inside plain code (another port's answer); a failure aborts with its error."""
    match result:
        case Success(value):
            return value  # type: ignore[no-any-return]
        case Failure(error):
            raise Abort(error)
    raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover


def as_result(
    call: Callable[[], T], catch: tuple[type[Exception], ...] = (), translate: Translate | None = None
) -> Result[T, DomainError]:
    """`call()` as a Result: an Abort gives its error, an exception of `catch` gives `translate(error)`.

    An exception `translate` answers None for (a subclass it does not know, say) propagates: it is a bug,
    not a storage failure, and hiding it would hide the bug.
    """
    try:
        return Success(call())
    except Abort as abort:
        return Failure(abort.error)
    except catch as error:
        translated = translate(error) if translate is not None else None
        if translated is None:
            raise
        return Failure(translated)
