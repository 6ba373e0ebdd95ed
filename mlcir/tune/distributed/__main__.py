"""``python -m mlcir.tune.distributed [--threads N]``: the ``--resources`` argument of ``ray
start`` that declares this machine's hardware fingerprint (:mod:`.fingerprint`)."""

from __future__ import annotations

import argparse
import json
import sys

from .fingerprint import host_fingerprint, resource_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mlcir.tune.distributed",
        description="Print the --resources argument of `ray start` that declares this "
                    "machine's hardware fingerprint to mlcir's Ray runner.")
    parser.add_argument("--threads", type=int,
                        help="the threads a measurement uses: the node's --num-cpus (default: "
                             "every CPU of this machine)")
    parser.add_argument("--show", action="store_true", help="print the fingerprint too")
    args = parser.parse_args(argv)
    fingerprint = host_fingerprint(args.threads)
    if args.show:
        print(json.dumps(fingerprint), file=sys.stderr)
    print(json.dumps({resource_name(fingerprint): 1}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
