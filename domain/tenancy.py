"""Tenancy: the namespace a call may act in, from the service's pin and the caller's own narrowing of it."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue, invalid_input
from agent_memory.domain.model import Memory, check_namespace

# None: no guard (a service that is not pinned and a caller who gave no namespace: the whole store)
Guard = tuple[str, ...] | None

EMPTY_GUARD = (
    "An empty namespace would reach every tenant, so it is refused as a guard: give labels like "
    "['user', 'u-123'], or omit the namespace."
)


def check_pin(raw: object) -> tuple[str, ...]:
    """A namespace a server may be pinned to: valid labels, at least one (InvalidValue otherwise)."""
    pin = check_namespace(raw)
    if not pin:
        raise InvalidValue("A server's namespace cannot be empty: give labels like user/u-123, or no namespace.")
    return pin


def _checked(raw: Sequence[str]) -> Result[tuple[str, ...], DomainError]:
    try:
        return Success(check_namespace(raw))
    except InvalidValue as error:
        return Failure(error.to_error())


def within(namespace: Sequence[str], outer: Sequence[str]) -> bool:
    """Whether `namespace` is `outer` or one of its sub-namespaces."""
    return tuple(namespace[: len(outer)]) == tuple(outer)


def _outside(asked: tuple[str, ...], pin: tuple[str, ...]) -> DomainError:
    return DomainError(
        ErrorCode.INVALID_INPUT,
        f"Namespace {list(asked)} is outside this server's namespace {list(pin)}: give {list(pin)} or a "
        "namespace below it, or omit it.",
    )


def narrow(pin: Guard, asked: Sequence[str] | None) -> Result[Guard, DomainError]:
    """The guard of one call: the caller's namespace if it lies within the pin, else the pin itself.

    An empty namespace from the caller is refused (it would mean "everything"), and so is one that
    leaves the pin (a parent, a sibling): a caller may only narrow.
    """
    if asked is None:
        return Success(pin)
    if not isinstance(asked, list | tuple):
        return Failure(invalid_input("A namespace is a list of labels, like ['user', 'u-123']."))
    if not asked:
        return Failure(invalid_input(EMPTY_GUARD))
    return _checked(asked).bind(
        lambda wanted: Success(wanted) if pin is None or within(wanted, pin) else Failure(_outside(wanted, pin))
    )


def new_memory_namespace(pin: Guard, asked: Sequence[str]) -> Result[tuple[str, ...], DomainError]:
    """The namespace a new memory is stored in: the caller's (within the pin), or the pin when none is given."""
    return _checked(asked).bind(
        lambda wanted: (
            Success(wanted if wanted or pin is None else pin)
            if pin is None or not wanted or within(wanted, pin)
            else Failure(_outside(wanted, pin))
        )
    )


def visible(memory: Memory, guard: Guard) -> bool:
    return guard is None or within(memory.namespace, guard)


def guarded_only(guard: Guard, what: str, command: str = "memory category …") -> Result[None, DomainError]:
    """INVALID_OPERATION for a change to the whole store asked under a namespace (it would touch other tenants);
    `command` is what the operator runs instead, in a shell."""
    if guard is None:
        return Success(None)
    return Failure(
        DomainError(
            ErrorCode.INVALID_OPERATION,
            f"{what} concerns the whole store, every namespace's memories: it is refused under a namespace "
            f"(a pinned server, or a call that gives one). Run `{command}` in a shell on the machine that holds "
            "the data, without a namespace.",
        )
    )
