"""Optimisers that use predictions: client/cloud partitioning (partition), primitive selection (select), width
advice (advise) and program synthesis (synthesize)."""
