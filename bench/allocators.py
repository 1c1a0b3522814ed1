#!/usr/bin/env python3
"""Compare the malloc ovs-vswitchd runs with (ovs.allocator), interleaved.

bench/variants.py with --key ovs.allocator: runs SCENARIO once per
allocator per round, rotating the order, and prints every run and the
medians of frame latency, reaction and recovery times, CPU and fidelity.
An allocator that is not installed is skipped with the package to install.

Usage: bench/allocators.py [--rounds 3] [--scenario scenarios/conditional-adv.yaml]
                           [--values system,tcmalloc,mimalloc,jemalloc] [--out DIR]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants  # noqa: E402

if __name__ == "__main__":
    variants.main(key="ovs.allocator", values="system,tcmalloc,mimalloc,jemalloc")
