#!/usr/bin/env python3
"""Mutation check: plant known bugs one at a time and make sure the tests catch every one.

Each mutant below replaces one short, exact snippet of a file (a ``.cl`` kernel, the library,
the command, or a test helper) in a temporary copy of the tree, then runs only the tests that
must catch it, on one device (``CLKIT_MUTATION_DEVICES``, default ``cpu``: the CPU driver
CI has).  A mutant the tests let through "survives", and the check fails.

    python tools/mutate.py              # every mutant; exit status 1 if one survives
    python tools/mutate.py --list       # the mutants and the tests meant to catch each
    python tools/mutate.py NAME...      # only these mutants

Before any mutant runs, every snippet must be found exactly once among the files its pattern
names and every test must be found, or the check stops with exit status 2 and says which:
code moves, and a mutant that no longer applies must not pass silently.  Then the selected
tests run once on the unchanged copy and must pass, so that a failure under a mutant is the
mutant's doing.  The tests run with ``-x`` (the first failure kills the mutant).
"""

from __future__ import annotations

import argparse
import glob
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 240


@dataclass
class Mutant:
    """One planted bug: ``original`` (found once in the files matching ``files``) becomes
    ``replacement``; ``tests`` are test function names (found wherever they are defined under
    tests/) or explicit ``path::name`` node ids; ``k`` narrows them as pytest's ``-k`` does."""

    name: str
    what: str
    files: str
    original: str
    replacement: str
    tests: list
    k: str = ""
    env: dict = field(default_factory=dict)
    args: tuple = ()


M = Mutant
VECTOR_ADD_TAIL = ("kernels_cl/**/vector_add*.cl", "for (ulong k = first; k < n; ++k)",
                   "for (ulong k = first; k + 1 < n; ++k)")
MUTANTS = [
    # -- grayscale
    M("grayscale-no-rounding", "uint8 luma truncated instead of rounded (no 2^14 term)",
      "kernels_cl/**/grayscale*.cl", "#define FIX_HALF (1 << (FIX_SHIFT - 1))",
      "#define FIX_HALF 0", ["test_uint8_matches_opencv"], k="13x29"),
    M("grayscale-rgba-tail", "the per-pixel tail steps through RGBA pixels 3 bytes at a time",
      "kernels_cl/**/grayscale*.cl", "src + (size_t)p * CN;", "src + (size_t)p * 3;",
      ["test_uint8_matches_opencv"], k="rgba"),
    M("grayscale-float-weights", "float luma with the green and blue weights swapped",
      "kernels_cl/**/grayscale*.cl", "((r) * cr + (g) * cg + (b) * cb)",
      "((r) * cr + (g) * cb + (b) * cg)", ["test_float32_equals_weighted_sum"], k="13x29"),
    M("grayscale-block-bytes", "the one-block layout (GPUs) swaps its 2nd and 3rd words",
      "kernels_cl/**/grayscale*.cl",
      "PACK_LUMAS(BYTE, LUMA4, g.w[0], g.w[1], g.w[2], g.w[CN - 1])",
      "PACK_LUMAS(BYTE, LUMA4, g.w[0], g.w[2], g.w[1], g.w[CN - 1])",
      ["test_each_layout_equals_opencv"], k="bt601"),
    M("grayscale-pair-halves", "the paired layout (CPUs) writes its first block's pixels twice",
      "kernels_cl/**/grayscale*.cl", "((__global uint4*)dst)[b + 1] = out.hi;",
      "((__global uint4*)dst)[b + 1] = out.lo;", ["test_each_layout_equals_opencv"], k="bt601"),
    M("grayscale-quad-lanes", "the four-block layout (AVX-512) writes its first block twice",
      "kernels_cl/**/grayscale*.cl", "d[1] = out.s4567;", "d[1] = out.s0123;",
      ["test_each_layout_equals_opencv"], k="bt601"),
    # -- vector_add
    M("vector_add-tail", "the scalar tail skips the last element", *VECTOR_ADD_TAIL,
      ["test_vector_add_matches_numpy"]),
    M("vector_add-tail-benchmark", "the same bug, caught by the benchmarks' result check",
      *VECTOR_ADD_TAIL, ["benchmarks/test_kernels.py"],
      k="vector_add and clkit", env={"CLKIT_BENCH_SIZE": "101x37"}, args=("--benchmark-disable",)),
    # -- convolve: the column index folding of each border mode (clkit.h), the rows' (host)
    M("fold-reflect", "reflect repeats the edge pixel's neighbour (mirror) on the right",
      "kernels_cl/**/*.h", "return m < n ? m : 2 * n - 1 - m;",
      "return m < n ? m : 2 * n - 2 - m;", ["test_convolve_modes"], k="reflect"),
    M("fold-mirror", "mirror repeats the edge pixel (reflect)",
      "kernels_cl/**/*.h", "return m < n ? m : 2 * n - 2 - m;",
      "return m < n ? m : 2 * n - 1 - m;", ["test_convolve_modes"], k="mirror"),
    M("fold-nearest", "nearest mirrors on the left instead of repeating the edge",
      "kernels_cl/**/*.h", "return clamp(i, 0, n - 1);",
      "return i < 0 ? min(-i, n - 1) : min(i, n - 1);", ["test_convolve_modes"], k="nearest"),
    M("fold-wrap", "wrap reflects on the left",
      "kernels_cl/**/*.h", "return clk_mod(i, n);",
      "return i < 0 ? clk_fold_reflect(i, n) : clk_mod(i, n);", ["test_convolve_modes"],
      k="wrap"),
    M("fold-constant", "constant mode repeats the edge instead of using cval",
      "kernels_cl/**/*.h", "return (i >= 0 && i < n) ? i : -1;",
      "return (i >= 0 && i < n) ? i : (i < 0 ? 0 : n - 1);", ["test_convolve_modes"],
      k="constant"),
    M("fold-rows-reflect", "the host's row map folds reflect as mirror",
      "clkit/_engine/**/*.py", "return np.where(m < n, m, 2 * n - 1 - m)",
      "return np.where(m < n, m, 2 * n - 2 - m)", ["test_convolve_modes"], k="reflect"),
    # -- gaussian_blur
    M("gaussian-radius", "the mask's radius int(truncate * sigma), not rounded",
      "clkit/_engine/**/*.py", "return gaussian_kernel1d(sigma, 0, int(truncate * sigma + 0.5))",
      "return gaussian_kernel1d(sigma, 0, int(truncate * sigma))",
      ["test_gaussian_sigmas"]),
    M("gaussian-derivative-sign", "the derivative weights' step multiplies by +1/sigma**2",
      "clkit/_engine/**/*.py", "np.diag(np.full(order, 1.0 / -(sigma * sigma)), -1)",
      "np.diag(np.full(order, 1.0 / (sigma * sigma)), -1)",
      ["test_gaussian_derivatives_take_scipys_weights"]),
    M("gaussian-inf-sign", "+inf in the result turned into -inf",
      "clkit/**/*.py",
      "           type(cval), truncate, type(truncate))\n"
      "    return run(remembered(key, make), [loadable(image)], out, device)",
      "           type(cval), truncate, type(truncate))\n"
      "    result = run(remembered(key, make), [loadable(image)], out, device)\n"
      "    if isinstance(result, np.ndarray):\n"
      "        result[np.isposinf(result)] = -np.inf\n"
      "    return result", ["test_gaussian_non_finite_pixels"], k="reflect"),
    M("gaussian-fused-vector-lane", "the GPU one-kernel filter's 16-byte row pass reads its first "
      "lane one element late", "kernels_cl/**/convolution_fused.cl",
      "(float4)(v[a], v[a + 1], v[a + 2], v[a + 3])",
      "(float4)(v[a + 1], v[a + 1], v[a + 2], v[a + 3])", ["test_gpu_fused_gaussian"],
      k="520 and reflect"),
    M("gaussian-baked-axes", "the GPU kernels' built-in row and column weights swapped",
      "clkit/**/*.py", '{"ROW_WEIGHTS": self.factors[1], "COL_WEIGHTS": self.factors[0]}',
      '{"ROW_WEIGHTS": self.factors[0], "COL_WEIGHTS": self.factors[1]}',
      ["test_gpu_gaussian_weights_built_into_the_program"], k="sigma_yx"),
    M("mask-space-whole-mask", "two passes' factors put in __global by the size of the 2-D mask",
      "clkit/**/*.py",
      "taps = sum(f.size for f in self.factors) if two_pass else self.corr.size",
      "taps = self.corr.size", ["test_gpu_two_passes_keep_their_factors_in_constant_memory"]),
    # -- mandelbrot
    M("mandelbrot-last-column", "the last column copied from its neighbour when width > 100",
      "clkit/**/*.py",
      "    return run(op, [], out, device, on_device=is_device_array(out))",
      "    result = run(op, [], out, device, on_device=is_device_array(out))\n"
      "    if width > 100 and isinstance(result, np.ndarray):\n"
      "        result[:, -1] = result[:, -2]\n"
      "    return result", ["test_matches_reference"], k="default"),
    M("mandelbrot-escape", "escaped at |z| = 2 instead of |z| > 2 (the CPU vector path)",
      "kernels_cl/**/mandelbrot*.cl", "active &= (zr2 + zi2 <= (VT)4);",
      "active &= (zr2 + zi2 < (VT)4);", ["test_known_points"]),
    # -- depth_to_points
    M("depth-inf-to-zero", "0 written for the coordinates of an infinite depth",
      "kernels_cl/**/depth_to_points*.cl", "p[0] = ((float)u - cx) * z * rfx;",
      "p[0] = isinf(z) ? 0.0f : ((float)u - cx) * z * rfx;",
      ["test_float32_depth_with_invalid_pixels"], k="13x29 and keep"),
    M("depth-keeps-infinite", "infinite depths counted as valid",
      "kernels_cl/**/depth_to_points*.cl", "return z != 0.0f && isfinite(z);",
      "return z != 0.0f && !isnan(z);", ["test_float32_depth_with_invalid_pixels"],
      k="13x29 and drop"),
    M("depth-swapped-centre", "y taken from the column centre cx",
      "kernels_cl/**/depth_to_points*.cl", "p[1] = ((float)v - cy) * z * rfy;",
      "p[1] = ((float)v - cx) * z * rfy;", ["test_uint16_depth"], k="13x29"),
    # -- devices and the launch API
    M("ranking-accelerators-as-cpus", "accelerators ranked among CPUs",
      "clkit/**/*.py", "_TYPE_RANK.get(device.type, 2)", "_TYPE_RANK.get(device.type, 1)",
      ["test_best_device_prefers_gpus_then_cpus_then_the_rest_then_capacity"]),
    M("fp64-unchecked", "float64 accepted on a device without cl_khr_fp64",
      "clkit/_engine/**/*.py", "    if not device.fp64:\n        raise",
      "    if False:\n        raise",
      ["test_float64_on_a_device_without_fp64"]),
    M("scalars-through-float32", "float and double scalar arguments rounded to float32",
      "clkit/**/*.py", "(largest magnitude {big:g})\")\n    return dtype.type(value)",
      "(largest magnitude {big:g})\")\n    return dtype.type(np.float32(value))",
      ["test_scalars_at_their_limits_pass"]),
    M("disk-cache-never-read", "every build compiles; the disk cache is never read",
      "clkit/**/*.py", "cached = None if debugging else cache_load(entry)", "cached = None",
      ["test_readers_never_take_a_torn_entry"]),
    # -- image files and the command
    M("images-truncated-accepted", "truncated images decoded, their missing part filled in",
      "clkit/**/*.py", "img.load()  # decode now",
      "__import__(\"PIL.ImageFile\").ImageFile.LOAD_TRUNCATED_IMAGES = True; img.load()  #",
      ["test_truncated_or_corrupt_images"], k="half"),
    M("images-palette-indices", "a palette image read as its indices",
      "clkit/**/*.py", "    if mode == \"P\":\n",
      "    if mode == \"P\":\n        return np.asarray(img, dtype=np.uint8)\n",
      ["test_gray_jpeg_rgba_and_palette"]),
    M("images-exif-turned-wrong", "EXIF orientation applied as a quarter turn the other way",
      "clkit/**/*.py", "img = ImageOps.exif_transpose(img)",
      "img = img.transpose(Image.Transpose.ROTATE_90)",
      ["test_jpeg_cmyk_and_exif_orientation"]),
    M("cli-device-ignored", "the image commands ignore --device",
      "clkit/**/*.py", "self.compute(image, args, kernels, device=device)",
      "self.compute(image, args, kernels, device=None)", ["test_device_option"]),
    M("cli-blur-mode-ignored", "clkit blur ignores --mode (always nearest)",
      "clkit/**/*.py", "gaussian_blur(image, args.sigma, mode=args.mode",
      "gaussian_blur(image, args.sigma, mode=\"nearest\"", ["test_blur_jpeg"]),
    # -- user kernels' numpy arguments
    M("in-place-overlap", "an array written in place may overlap another argument",
      "clkit/**/*.py", "return not any((writes or other_writes) and np.may_share_memory(",
      "return not any(False and np.may_share_memory(",
      ["test_an_array_passed_twice_is_read_as_it_was_at_the_call"]),
    M("staged-back-skipped", "a user kernel's staged result never comes home",
      "clkit/**/*.py", "                if how == STAGE:\n                    try:",
      "                if how == -1:\n                    try:",
      ["test_user_kernels_stage_large_numpy_arguments"]),
    # -- batches and pinned memory
    M("map-reads-ahead-unbounded", "clkit.map reads the whole input before yielding",
      "clkit/_launch/map.py", "while failure is None and len(window) < most:",
      "while failure is None:", ["test_a_batch_of_200_keeps_only_a_few_images_alive"]),
    M("map-out-of-order", "clkit.map yields the latest image's result first",
      "clkit/_launch/map.py", "result = window.popleft().result()", "result = window.pop().result()",
      ["test_results_equal_single_calls_in_input_order"]),
    M("map-error-unnamed", "a failing image's error does not say which image",
      "clkit/_launch/map.py", "    except Exception as exc:\n        _at(exc, index)\n        raise",
      "    except Exception as exc:\n        raise",
      ["test_an_error_names_the_image_and_leaves_earlier_results_whole"]),
    M("out-over-input", "out= over the image read by the kernels as they write it",
      "clkit/_engine/dispatch.py",
      "if out is not None and _overlaps(out, inputs, op.elementwise and not multi):",
      "if False:", ["test_out_over_the_image_gives_the_filtered_image"], k="5x5 and itself"),
    M("typedefs-unread", "a typedef'd parameter's type not looked up in the source",
      "clkit/_build/build.py", "aliases = typedefs(source.text)", "aliases = {}",
      ["test_typedef_and_struct_parameters"]),
    M("spec-without-a-letter", "a device spec of digits matched against version strings",
      "clkit/_platform/devices.py", 'elif not re.search(r"[a-z]", base):', "elif False:",
      ["test_a_spec_without_a_letter_names_no_device"]),
    M("pinned-staged", "pinned arrays copied through the staging buffers like any numpy array",
      "clkit/_memory/transfer.py", "return context is not None and context == rt.context",
      "return False", ["test_pinned_arrays_skip_the_staging_on_a_gpu"]),
    M("pinned-release-kept", "release_memory leaves the idle pinned result blocks mapped",
      "clkit/_memory/pinned.py", "idle, blocks.free = blocks.free, {}", "idle = blocks.free",
      ["test_release_memory_frees_the_idle_result_blocks"]),
    # -- the tests' own reference helper
    M("helper-infinite-tolerance", "assert_close_scaled lets an infinite tolerance pass anything",
      "tests/**/_reference.py", "ok = finite & np.isfinite(g) & (np.abs(g - expected) <= tol)",
      "ok = np.abs(g - expected) <= tol", ["test_close_scaled_refuses"]),
]


def _skipped(folder, names):
    """Hidden entries (.git, .venv, caches) but .ci, and build outputs: not part of the tree."""
    return [n for n in names if (n.startswith(".") and n != ".ci") or n in ("__pycache__", "build")
            or n.endswith((".egg-info", ".pyc"))]


def copy_tree(tree: Path) -> Path:
    shutil.copytree(ROOT, tree, symlinks=True, ignore=_skipped)
    return tree


def locate(tree: Path, mutant: Mutant) -> tuple[Path | None, str]:
    """The one file holding the mutant's snippet, or None and what is wrong."""
    paths = sorted({Path(p) for p in glob.glob(str(tree / mutant.files), recursive=True)})
    hits = [(p, p.read_text().count(mutant.original)) for p in paths if p.is_file()]
    hits = [(p, n) for p, n in hits if n]
    if len(hits) == 1 and hits[0][1] == 1:
        return hits[0][0], ""
    if not hits:
        return None, f"snippet not found in {mutant.files} ({len(paths)} files)"
    where = ", ".join(f"{p.relative_to(tree)} x{n}" for p, n in hits)
    return None, f"snippet not unique in {mutant.files}: {where}"


def test_index(tree: Path) -> dict:
    """Test function name -> the file under tests/ that defines it."""
    index: dict = {}
    for path in sorted((tree / "tests").rglob("test_*.py")):
        for name in re.findall(r"^def (test_\w+)\(", path.read_text(), re.M):
            index.setdefault(name, []).append(path)
    return index


def node_ids(tree: Path, mutant: Mutant, index: dict) -> tuple[list, list]:
    ids, problems = [], []
    for test in mutant.tests:
        if "/" in test:
            path = tree / test.split("::")[0]
            (ids if path.exists() else problems).append(
                test if path.exists() else f"{test}: no such file")
            continue
        found = index.get(test, [])
        if len(found) != 1:
            problems.append(f"test {test}: defined in {len(found)} files under tests/")
        else:
            ids.append(f"{found[0].relative_to(tree)}::{test}")
    return ids, problems


def pytest(tree: Path, env: dict, ids: list, k: str = "", args=(), extra_env=None):
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-rf",
               *args, *ids] + (["-k", k] if k else [])
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=tree, env={**env, **(extra_env or {})},
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {TIMEOUT_S} s", time.perf_counter() - start
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - start


def selection(m: Mutant) -> str:
    """The mutant's tests as a -k expression over the node ids given (test names and -k)."""
    names = " or ".join(t.split("::")[-1] for t in m.tests if not t.endswith(".py"))
    parts = [f"({p})" for p in (names, m.k) if p]
    return " and ".join(parts)


def first_failure(output: str) -> str:
    m = re.search(r"^FAILED (\S+)", output, re.M)
    return m.group(1) if m else "?"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="run only these mutants")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="mutants tested at once, each in its own copy (default: 2)")
    opts = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if not opts.names or m.name in opts.names]
    unknown = set(opts.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"no mutant named {', '.join(sorted(unknown))}")
    if opts.list:
        for m in mutants:
            print(f"{m.name:30} {m.what}\n{'':30} caught by {', '.join(m.tests)}"
                  + (f" -k '{m.k}'" if m.k else ""))
        return 0

    with tempfile.TemporaryDirectory(prefix="clkit-mutants-") as tmp:
        tree = copy_tree(Path(tmp) / "tree0")
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1",
                   CLKIT_CACHE_DIR=str(Path(tmp) / "cache"),
                   CLKIT_TEST_DEVICES=os.environ.get("CLKIT_MUTATION_DEVICES", "cpu"))
        env.pop("CLKIT_CACHE", None)
        index = test_index(tree)
        plan, problems = [], []
        for m in mutants:
            path, problem = locate(tree, m)
            ids, missing = node_ids(tree, m, index)
            problems += [f"{m.name}: {p}" for p in ([problem] if problem else []) + missing]
            plan.append((m, path, ids))
        if problems:
            print("mutation check: mutants that no longer apply (update tools/mutate.py):",
                  *problems, sep="\n  ", file=sys.stderr)
            return 2

        # The unchanged tree must pass the tests the mutants are checked with: one run per
        # environment, its -k the union of the mutants' selections.
        groups: dict = {}
        for m, _, ids in plan:
            group = groups.setdefault((tuple(sorted(m.env.items())), m.args), (set(), []))
            group[0].update(ids)
            group[1].append(selection(m))
        for (env_items, args), (ids, exprs) in groups.items():
            k = "" if "" in exprs else " or ".join(f"({e})" for e in sorted(set(exprs)))
            code, output, seconds = pytest(tree, env, sorted(ids), k, args, dict(env_items))
            if code != 0:
                print(f"mutation check: the tests fail on the unchanged tree ({seconds:.0f} s):"
                      f"\n{output[-3000:]}", file=sys.stderr)
                return 2
            print(f"unchanged tree: {output.strip().splitlines()[-1]}", flush=True)

        # Each worker plants its mutants in its own copy of the tree.
        trees: queue.Queue = queue.Queue()
        trees.put(tree)
        for i in range(1, max(1, opts.jobs)):
            trees.put(copy_tree(Path(tmp) / f"tree{i}"))

        def attempt(item):
            m, path, ids = item
            own = trees.get()
            target = own / path.relative_to(tree)
            text = target.read_text()
            target.write_text(text.replace(m.original, m.replacement))
            try:
                code, output, seconds = pytest(own, {**env, "PYTHONPATH": str(own)}, ids, m.k,
                                               m.args, m.env)
            finally:
                target.write_text(text)
                trees.put(own)
            if code == 1:
                verdict = f"killed by {first_failure(output)}"
            elif code is None:
                verdict = "killed (hung)"
            elif code == 0:
                verdict = "SURVIVED"
            else:
                verdict = f"ERROR (pytest exit {code}):\n{output[-2000:]}"
            print(f"{m.name:30} {seconds:5.1f} s  {verdict}", flush=True)
            return code in (1, None)

        with ThreadPoolExecutor(max(1, opts.jobs)) as pool:
            killed = list(pool.map(attempt, plan))
        survivors = killed.count(False)
        print(f"{len(plan) - survivors} of {len(plan)} mutants killed")
        return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
