"""Tests of the adapters: format, storage and embedding implementations of the ports."""
