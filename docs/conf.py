"""Sphinx configuration of clkit's documentation (``make docs``).

Pages are MyST markdown; the API reference is generated from the docstrings
(autosummary and numpydoc); the command-line page from ``clkit.cli``'s argparse
definitions (``_ext/clkit_cli.py``).  The build needs no network: nothing here
fetches another project's inventory.
"""

import logging
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
# The clkit beside these docs, ahead of any installed copy.
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("COLUMNS", "88")  # argparse's help width on the command-line page

import clkit  # noqa: E402

project = "clkit"
author = "the clkit authors"
copyright = "clkit's authors, MIT licence"
release = version = clkit.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "clkit_cli",
    "clkit_api",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_templates", "data"]  # data/: tables the pages include
templates_path = ["_templates"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3


class _OpenGlobs(logging.Filter):
    """The guide's and the API's toctrees end with a glob (``guide/*``, ``api/*``) that picks
    up pages added later; while every page is listed by name it matches nothing new, which is
    not a mistake (Sphinx gives that warning no type that ``suppress_warnings`` could name)."""

    def filter(self, record):
        message = record.getMessage()
        return not ("didn't match any documents" in message
                    and ("'guide/*'" in message or "'api/*'" in message))


logging.getLogger("sphinx.sphinx.directives.other").addFilter(_OpenGlobs())

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"          # types are in each docstring's Parameters
autodoc_default_options = {"members": True, "special-members": "__call__"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Names in signatures and docstrings of projects whose inventories the offline build cannot
# fetch: they stay plain text.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|pyopencl|cl|argparse|threading|concurrent|collections|typing"
               r"|contextlib|os|pathlib)\..*"),
]

# The modules whose __all__ the API reference must cover, name by name (_ext/clkit_api.py):
# clkit, clkit.kernels, and each clkit.X that has a page docs/api/X.*.
clkit_api_modules = ["clkit", "clkit.kernels"] + sorted(
    f"clkit.{page.stem}" for page in (HERE / "api").glob("*.*")
    if page.stem not in ("clkit", "kernels"))

html_theme = "pydata_sphinx_theme"
html_title = f"clkit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
