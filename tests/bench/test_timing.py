"""A benchmark times the kernels a loop of calls settles on, not the first calls' ones."""

from clkit._launch.kernel import recording
from clkit.bench import make_cases, parse_size


def test_timed_calls_run_the_specialised_kernels(device, cache_dir):
    # An empty disk cache and a variant never called (cache_dir drops what the runtime holds,
    # its tier state included): a plain first call runs the generic convolution while the
    # specialised build waits for the variant to prove hot.
    case = next(c for c in make_cases(parse_size("48x32")) if c.id == "convolve_5x5")
    variant = case.variant("clkit_kernel", device)
    variant.warm_up()
    with recording() as launches:
        variant.run()
    names = {launch.kernel.name for launch in launches}
    assert names and not any("generic" in name for name in names), names
    case.release()
