"""Run every benchmark: ``python -m benchmarks`` (or ``make bench``)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks


def main() -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    only = set(sys.argv[1:])
    unknown = sorted(only - set(names))
    if unknown:
        print(f"benchmarks: no benchmark named {', '.join(unknown)}; have: {', '.join(names)}", file=sys.stderr)
        return 2
    for name in names:
        if only and name not in only:
            continue
        print(f"== {name}", flush=True)
        importlib.import_module(f"benchmarks.{name}").main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
