"""The Qdrant backend (local mode or a server): records, boundary, layout, store, catalog, terms and keywords."""
