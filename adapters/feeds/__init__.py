"""Side indexes fed from the engine: local caches that replay change records every node appends to a shared feed."""
