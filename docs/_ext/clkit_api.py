"""A build check: every public name of clkit's modules has an entry in the API reference.

``clkit_api_modules`` (conf.py) lists the modules whose ``__all__`` the reference must cover;
a name without a ``py`` object of its own (``clkit.select``, ``clkit.kernels.convolve``) is a
warning, so ``make docs`` (warnings as errors) fails until the reference lists it.
"""

from __future__ import annotations

import importlib

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _check(app, env):
    documented = set(env.get_domain("py").objects)
    for module_name in app.config.clkit_api_modules:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            if f"{module_name}.{name}" not in documented:
                logger.warning("%s.%s is public (in __all__) but has no entry in the API "
                               "reference: add it to an autosummary list of docs/api/",
                               module_name, name)
    return []


def setup(app):
    app.add_config_value("clkit_api_modules", ["clkit", "clkit.kernels"], "env")
    app.connect("env-check-consistency", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
