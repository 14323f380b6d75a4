"""Tracing: the trace of a process's launches and transfers, and its export."""
