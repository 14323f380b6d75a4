"""The package list, found rather than written out, so that a new subpackage cannot be left out
of the wheel: every package under ``clkit/``, plus the kernel sources, which stay in
``kernels_cl/`` at the top of the repository and ship inside the package as ``clkit.kernels_cl``
(the ``package_dir`` mapping in setup.cfg).  setup.cfg's ``packages = find:`` cannot add a
package that lives outside ``clkit/``; everything else is in setup.cfg.
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["clkit", "clkit.*"]) + ["clkit.kernels_cl"])
