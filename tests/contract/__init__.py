"""Contract tests: every storage adapter runs the same VectorStore/StoreCatalog suite."""
