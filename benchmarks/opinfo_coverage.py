"""How much of PyTorch's operator database (OpInfo ``op_db``) nnkit covers, and how well.

Resolves every ``op_db`` entry to nnkit the way ``tests/autograd/test_opinfo.py`` does,
runs its CPU sample inputs and prints: entries resolved, and samples that pass / give a
wrong value, shape, dtype or gradient / fail with an obscure error / are refused clearly
(/ are exempted as known deviations). Needs torch and expecttest.

Run: ``python -m benchmarks.opinfo_coverage`` (the test's sampling: up to 8 float64 and 4
float32 samples per entry), ``--max 20 --float64-only`` (the issue's measure), ``-v`` to
list every sample that does not pass, ``--only NAME`` for entries containing NAME.
"""

from __future__ import annotations

import argparse
import collections
import time
import warnings

STATUSES = ("pass", "wrong", "obscure", "refused", "exempt", "skip")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=8, help="float64 samples per entry")
    ap.add_argument("--max32", type=int, default=4, help="float32 samples per entry")
    ap.add_argument("--float64-only", action="store_true")
    ap.add_argument("--only", default=None, help="entries whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="list what does not pass")
    args = ap.parse_args(argv)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db

    from tests.autograd import opinfo_map as om

    t0 = time.perf_counter()
    counts: collections.Counter = collections.Counter()
    resolved, unresolved, bad_entries = [], [], set()
    for op in op_db:
        key = om.entry_key(op)
        if args.only and args.only not in key:
            continue
        res = om.run_entry(op, (args.max, args.max32), float32=not args.float64_only)
        if res is None:
            unresolved.append(key)
            continue
        resolved.append(key)
        for dname, i, status, detail in res:
            counts[status] += 1
            if status in ("wrong", "obscure"):
                bad_entries.add(key)
            if args.verbose and status not in ("pass", "skip"):
                print(f"{status:8s} {key} [{dname} #{i}] {detail[:200]}")
    total = sum(counts[s] for s in STATUSES if s != "skip")
    print(f"entries resolved: {len(resolved)} of {len(resolved) + len(unresolved)}")
    print(f"samples: {total} run, " + ", ".join(f"{counts[s]} {s}" for s in STATUSES))
    if total:
        print(f"pass rate: {100 * counts['pass'] / total:.2f} %")
    if bad_entries:
        print("entries with wrong/obscure samples:", ", ".join(sorted(bad_entries)))
    print(f"time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
