"""The memory domain: attrs types, decay rules, typed errors and Result-returning use cases."""
