"""Who a server's caller is: its bearer token, and the namespace that token (or the server) is pinned to."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError
from agent_memory.domain.service import MemoryService
from agent_memory.domain.tenancy import Guard
from agent_memory.entrypoints.settings import Settings, TokenNamespaces

UNAUTHORIZED = "Missing or wrong API token: send 'Authorization: Bearer <token>'."


@frozen(kw_only=True)
class Tenancy:
    """The one place a door learns a caller's namespace: from the server's settings, never from the request body.

    - `api_token` (MEMORY_API_TOKEN / --api-token): one key for the whole server, pinned to `pin` if set;
    - `tokens` (MEMORY_API_TOKENS): a key per tenant, each pinned to its own namespace (inside `pin`, if set);
    - `pin` (MEMORY_NAMESPACE): the namespace every caller is confined to (stdio too: it has no token).
    With no token at all, every caller is the server's single user, pinned to `pin` when there is one.
    """

    pin: Guard = None
    api_token: str | None = None
    tokens: TokenNamespaces = ()

    @classmethod
    def of(cls, settings: Settings, api_token: str | None) -> Tenancy:
        return cls(pin=settings.namespace, api_token=api_token or None, tokens=settings.api_tokens)

    @property
    def secured(self) -> bool:
        """Whether every request must carry a token (one of them is set)."""
        return bool(self.api_token or self.tokens)

    def namespace_of(self, authorization: str | None) -> tuple[bool, Guard]:
        """(allowed, the caller's pin) for an `Authorization` header; every token is compared in constant time."""
        if not self.secured:
            return True, self.pin
        scheme, _, presented = (authorization or "").partition(" ")
        offered = presented.strip().encode()
        found: tuple[bool, Guard] = (False, None)
        if scheme.lower() == "bearer":
            for token, namespace in ((self.api_token, self.pin), *self.tokens):
                if token and hmac.compare_digest(offered, token.encode()):
                    found = (True, namespace)
        return found

    def services(self, service: MemoryService) -> Result[Mapping[Guard, MemoryService], DomainError]:
        """The service pinned to each namespace a caller may have, built (and validated) once at start-up."""
        pins: list[Guard] = [self.pin, *(namespace for _, namespace in self.tokens)]
        built: dict[Guard, MemoryService] = {}
        for pin in pins:
            match service.within(pin):
                case Success(pinned):
                    built[pin] = pinned
                case Failure(error):
                    return Failure(error)
        return Success(built)
