"""``clkit info [DEVICE]``: everything about one device, as clinfo shows it."""

from __future__ import annotations

import json

import pyopencl as cl

from .._platform.devices import select
from ._command import Command

_BYTES = ("global_mem", "local_mem", "max_alloc", "max_constant_buffer_size",
          "global_mem_cache_size")


class Info(Command):
    def arguments(self, p):
        p.add_argument("spec", nargs="?", metavar="DEVICE",
                       help="a device spec (default: the best)")
        p.add_argument("--json", action="store_true", help="print as JSON")

    def run(self, args):
        d = select(args.spec if args.spec is not None else args.device)
        c = d.cl_device

        def get(attr, default=None):
            try:
                return getattr(c, attr)
            except (cl.Error, AttributeError):  # drivers differ in which queries they answer
                return default

        record = d.as_dict()
        record.update({
            "opencl_c_version": get("opencl_c_version", ""),
            "max_work_item_sizes": list(d.max_work_item_sizes),
            "max_constant_buffer_size": get("max_constant_buffer_size"),
            "preferred_vector_width_float": get("preferred_vector_width_float"),
            "native_vector_width_float": get("native_vector_width_float"),
            "address_bits": get("address_bits"),
            "mem_base_addr_align": get("mem_base_addr_align"),
            "global_mem_cache_size": get("global_mem_cache_size"),
            "global_mem_cacheline_size": get("global_mem_cacheline_size"),
            "image_support": bool(get("image_support", 0)),
            "profiling_timer_resolution_ns": get("profiling_timer_resolution"),
            "extensions": list(d.extensions),
        })
        if args.json:
            print(json.dumps(record, indent=2))
            return
        width = max(len(k) for k in record)
        for key, value in record.items():
            if key == "extensions":
                value = "\n".join([""] + [" " * (width + 2) + e for e in value]) if value \
                    else "none"
            elif key in _BYTES and isinstance(value, int):
                value = f"{value:,} bytes ({value / 2**20:,.1f} MiB)"
            print(f"{key.ljust(width)}  {value}")
