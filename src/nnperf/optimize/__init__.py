"""Optimisers that use predictions: partitioning (issue 5); later primitives, precision, synthesis."""
