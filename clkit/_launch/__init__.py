"""Launching kernels: the bound kernel and its launch, argument conversion, programs and clkit.map."""
