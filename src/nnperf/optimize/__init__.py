"""Optimisers that use predictions: partitioning (issue 5), primitive selection (select); later precision, synthesis."""
