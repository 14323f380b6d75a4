"""The kernel library: ready image and array kernels on any device."""

__all__ = []
