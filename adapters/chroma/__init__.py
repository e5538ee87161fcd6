"""The ChromaDB backend (embedded or a server): records, boundary, layout, session, clients, mirror, store, catalog."""
