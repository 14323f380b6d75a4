"""Devices and the runtime of each context: platforms, the ICD loader, the Oclgrind simulator."""
