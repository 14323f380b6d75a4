"""A trace's timeline written out: Chrome trace-event JSON, and the same drawn with matplotlib.

:class:`clkit.Trace` reads its records and hands them here: :func:`trace_events`
lays them out as trace events (one process per device with one thread per
queue, and one process "host" with one thread per Python thread),
:func:`write_json` saves them for Perfetto or chrome://tracing and
:func:`plot` draws them, one row per thread of the JSON.
"""

from __future__ import annotations

import json
import os

from .._errors import ClkitError
from .._files import atomic_write


def trace_events(records, tracks, t_start: int) -> list[dict]:
    """The records as trace events, timed in microseconds from host time ``t_start``.

    ``tracks`` is the trace's reading of its records together (track numbers
    and device clock offsets).  Each command is a complete (``"ph": "X"``)
    event on the host's thread, and another on its device queue where the
    device timed it; ``"M"`` events name the processes and threads.
    """
    events = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0,
               "args": {"name": "host"}}]
    named = set()
    for rec in records:
        tid = tracks.thread(rec)
        if (0, tid) not in named:
            named.add((0, tid))
            events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid,
                           "args": {"name": rec.thread.name}})
        args = {"kind": rec.kind, "bytes": rec.nbytes, "device": rec.device.id,
                "host_before_enqueue_us": tracks.host_before(rec) / 1e3}
        events.append({"ph": "X", "name": rec.name, "cat": "host", "pid": 0, "tid": tid,
                       "ts": (rec.t0 - t_start) / 1e3, "dur": (rec.t1 - rec.t0) / 1e3,
                       "args": args})
        start, end = tracks.device_span(rec)
        if start is None:
            continue
        pid = tracks.device_pid(rec.device)
        if (pid, -1) not in named:
            named.add((pid, -1))
            events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                           "args": {"name": f"device {rec.device}"}})
        queue = tracks.queue(rec)
        if (pid, queue) not in named:
            named.add((pid, queue))
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": queue,
                           "args": {"name": f"queue {queue}"}})
        dev_args = dict(args)
        if rec.nbytes and end > start:
            dev_args["GB/s"] = round(rec.nbytes / (end - start), 3)
        events.append({"ph": "X", "name": rec.name, "cat": rec.kind, "pid": pid,
                       "tid": queue, "ts": (start - t_start) / 1e3,
                       "dur": (end - start) / 1e3, "args": dev_args})
    return events


def write_json(path, data: dict) -> None:
    """Write ``data`` as JSON to ``path``, whole or not at all."""
    with atomic_write(path) as f:
        f.write(json.dumps(data).encode())


def plot(path, data: dict) -> None:
    """Draw the trace-event JSON ``data``: one row per device queue and per host thread.

    The file's type follows its extension (``.png`` where it has none).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ClkitError("Trace.plot needs matplotlib: pip install 'clkit[plot]' "
                         "(or matplotlib)") from None
    events = data["traceEvents"]
    names = {(e["pid"], e["tid"] if e["name"] == "thread_name" else None): e["args"]["name"]
             for e in events if e["ph"] == "M"}
    rows: dict = {}
    for e in events:
        if e["ph"] == "X":
            rows.setdefault((e["pid"], e["tid"]), []).append(e)
    order = sorted(rows, key=lambda k: (k[0] == 0, k))  # devices first, the host below
    colours = {"kernel": "tab:blue", "h2d": "tab:orange", "d2h": "tab:green",
               "host": "tab:gray"}
    fig = Figure(figsize=(11, 1.2 + 0.45 * max(1, len(order))))
    ax = fig.add_subplot()
    for y, key in enumerate(order):
        for cat in colours:
            spans = [(e["ts"] / 1e3, max(e["dur"] / 1e3, 1e-6)) for e in rows[key]
                     if e["cat"] == cat]
            if spans:
                ax.broken_barh(spans, (y - 0.4, 0.8), color=colours[cat])
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([f"{names.get((p, None), p)}: {names.get((p, t), t)}"
                        for p, t in order], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms from the start of the trace")
    ax.set_title(f"clkit trace: {data['otherData']['wall_ms']:.2f} ms of wall time")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=k if k != "host" else "host (in clkit)")
                       for k, c in colours.items()], loc="upper right", fontsize=8)
    fig.tight_layout()
    with atomic_write(path) as f:
        fig.savefig(f, format=_format(path), dpi=120)


def _format(path) -> str:
    ext = os.path.splitext(str(path))[1].lstrip(".").lower()
    return ext or "png"
