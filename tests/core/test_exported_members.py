"""The public surface: exactly what __all__ lists, each documented with an example."""

import inspect

import clkit


def test_all_names_exist_and_are_sorted():
    for name in clkit.__all__:
        assert hasattr(clkit, name), name
    assert list(clkit.__all__) == sorted(clkit.__all__)


def test_public_names_are_exported():
    public = {n for n, v in vars(clkit).items()
              if not n.startswith("_") and not inspect.ismodule(v)}
    assert public <= set(clkit.__all__)


def test_public_functions_have_examples():
    for name in clkit.__all__:
        obj = getattr(clkit, name)
        if inspect.isfunction(obj):
            assert obj.__doc__ and ">>>" in obj.__doc__, f"{name} has no >>> example"


def test_errors_form_one_hierarchy():
    for name in ("NoOpenCLError", "DeviceNotFoundError", "BuildError", "LaunchError",
                 "OutOfDeviceMemoryError", "ArgumentTypeError", "ArgumentValueError"):
        assert issubclass(getattr(clkit, name), clkit.ClkitError)
    assert issubclass(clkit.ArgumentTypeError, TypeError)
    assert issubclass(clkit.ArgumentValueError, ValueError)
    assert issubclass(clkit.OutOfDeviceMemoryError, MemoryError)


def test_host_memory_and_batch_names_are_public():
    for name in ("pinned_empty", "pinned_like", "is_pinned", "map"):
        assert name in clkit.__all__ and callable(getattr(clkit, name))
