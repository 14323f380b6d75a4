"""``clkit devices``: every OpenCL platform and device, with the ids ``CLKIT_DEVICE`` takes."""

from __future__ import annotations

import json

from .._errors import ClkitError
from .._platform.devices import devices, select
from ._command import Command


def mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


class Devices(Command):
    def arguments(self, p):
        p.add_argument("--json", action="store_true", help="print the list as JSON")

    def run(self, args):
        found = devices()
        if args.json:
            print(json.dumps([d.as_dict() for d in found], indent=2))
            return
        default = unmatched = None
        try:
            default = select(args.device)
        except ClkitError as exc:  # shown under the table, which is what one looks at to fix it
            unmatched = exc
        rows = [("id", "type", "name", "platform", "version", "CUs", "memory", "max alloc")]
        for d in found:
            mark = "*" if d == default else " "
            rows.append((f"{mark}{d.id}", d.type + (" (sim)" if d.simulator else ""), d.name,
                         d.platform, d.version, str(d.compute_units), mib(d.global_mem),
                         mib(d.max_alloc)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if default is not None:
            print("\n* the default device; CLKIT_DEVICE=<id, type or name> picks another, "
                  "CLKIT_VISIBLE_DEVICES=<id,...> hides the rest")
        elif unmatched is not None:
            print(f"\nno default device: {str(unmatched).split('; the visible devices')[0]}")
