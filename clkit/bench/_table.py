"""The report as text: a header, then one table per case."""

from __future__ import annotations

BASE_KEYS = ("serial", "numpy", "scipy", "cv2", "torch", "cupy")


def _fmt_ms(ms: float) -> str:
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.4f}"


def _fmt_ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.2f}x" if x < 10 else f"{x:.1f}x"


def display_name(r: dict, devices: dict) -> str:
    """A result's label, with its device's id, platform and type for clkit rows."""
    label = r["label"]
    if r["device"] is not None:
        d = devices.get(r["device"])
        label += f" {r['device']}" + (f" ({d['short_platform']} {d['type']})" if d else "")
    return label


def _label(r: dict, devices: dict) -> str:
    return display_name(r, devices) + (" (1)" if r["key"] == "serial" else "")


def format_case(case: dict, devices: dict) -> str:
    """One case's table: time, bandwidth and speed-ups over each baseline present."""
    rows = [r for r in case["results"]]
    bases = [k for k in BASE_KEYS if any(r["key"] == k and r.get("median_ms") for r in rows)]
    base_ms = {k: next(r["median_ms"] for r in rows if r["key"] == k and r.get("median_ms"))
               for k in bases}
    head = ["variant", "median ms", "runs", "GB/s"] + [f"vs {k}" for k in bases] + ["check"]
    table = [head]
    for r in rows:
        if r.get("median_ms") is None:
            table.append([_label(r, devices), "failed", "", ""] + [""] * len(bases)
                         + [r["error"] or ""])
            continue
        line = [_label(r, devices), _fmt_ms(r["median_ms"]), str(r["runs"]),
                f"{r['gbps']:.2f}" if r.get("gbps") else ""]
        line += [_fmt_ratio(base_ms[k] / r["median_ms"]) for k in bases]
        line.append(r.get("check") or "")
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
    lines = []
    title = f"{case['title']}  [{case['bytes_note']}]" if case.get("bytes_note") else case["title"]
    lines.append(title)
    for row in table:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:])]
        lines.append("  " + "  ".join(cells + [row[-1]]).rstrip())
    notes = []
    serial = next((r for r in rows if r["key"] == "serial"), None)
    if serial is not None:
        notes.append(f"(1) serial Python ran on {serial['note']}; its time is scaled "
                     f"x{serial['scale']:,.1f} to the full size")
    if bases:
        notes.append("vs X: X's time over this row's time (above 1: this row is faster)")
    if case["unavailable"]:
        notes.append("not run: " + "; ".join(f"{k} ({v})" for k, v in
                                             case["unavailable"].items()))
    lines += ["  " + n for n in notes]
    return "\n".join(lines)


def format_transfers(case: dict, devices: dict) -> str:
    table = [["transfer", "median ms", "runs", "GB/s"]]
    for r in case["results"]:
        if r.get("median_ms") is None:
            table.append([_label(r, devices), "failed", "", r["error"] or ""])
            continue
        table.append([_label(r, devices), _fmt_ms(r["median_ms"]), str(r["runs"]),
                      f"{r['gbps']:.2f}"])
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = [f"{case['title']}  [{case['bytes_note']}]"]
    for row in table:
        lines.append("  " + "  ".join([row[0].ljust(widths[0])]
                                      + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]))
    if case["unavailable"]:
        lines.append("  not run: " + "; ".join(f"{k} ({v})" for k, v in
                                               case["unavailable"].items()))
    return "\n".join(lines)


def compared(case: dict) -> bool:
    """Whether a case record compares a kernel with references (not so: the transfers)."""
    return case.get("reference", "numpy") is not None


def format_record(case: dict, devices: dict) -> str:
    """A case's table: speed-ups for a kernel, bandwidths for the transfers."""
    return format_case(case, devices) if compared(case) else format_transfers(case, devices)


def format_header(machine: dict, sizes) -> str:
    m = machine
    lines = [f"clkit bench, {m['date']}: {m['cpu']} ({m['cores']} cores), load average "
             + ", ".join(f"{x:.2f}" for x in m["load_average"] or []),
             "versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v),
             f"sizes {sizes.describe()}"]
    for d in m["devices"]:
        lines.append(f"device {d['id']}: {d['name']} ({d['platform']}, {d['type']}, "
                     f"{d['compute_units']} compute units)")
    if m.get("torch_device"):
        lines.append(f"torch runs on {m.get('cuda_device') or 'the CPU'}")
    lines.append("clkit kernel: device arrays, sum of the kernels' profiling events; clkit call: "
                 "the same call in a loop, the queue finished after it, wall clock per call; "
                 "clkit e2e: numpy in and out, wall clock; medians after a warm-up")
    return "\n".join(lines)
