"""``python -m contextadmin_sdk.client deliver SPOOL_FILE...``: send what runs' spool files hold
to the server, for runs whose runtime is gone (a run that ended while the server was away has
no process left to resume it). ``RunReporter.deliver`` does the work and says what it did."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from contextadmin_sdk.client.reporter import RunReporter
from contextadmin_sdk.client.resume import spool_read
from contextadmin_sdk.client.spool_file import SpoolInUse
from contextadmin_sdk.client.transport import ReportError, base_url_check, token_check


def parser_build() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m contextadmin_sdk.client")
    commands = parser.add_subparsers(dest="command", required=True)
    deliver = commands.add_parser(
        "deliver", help="send runs' spooled events the server has not stored, then stop"
    )
    deliver.add_argument("spools", nargs="+", type=Path, metavar="SPOOL_FILE",
                         help="a run's spool, SPOOL_DIR/<run_id>.jsonl")
    deliver.add_argument("--url", default=os.environ.get("CONTEXTADMIN_URL"),
                         help="the server's root URL (default: $CONTEXTADMIN_URL)")
    deliver.add_argument("--token", default=os.environ.get("CONTEXTADMIN_TOKEN"),
                         help="an API token (default: $CONTEXTADMIN_TOKEN)")
    deliver.add_argument("--timeout", type=float, default=60.0,
                         help="seconds to wait for each run's acknowledgements (default: 60)")
    return parser


def main(*, argv: list[str] | None = None) -> int:
    """Deliver each spool; exit 0 when every one is acknowledged, 1 otherwise."""
    parser = parser_build()
    args = parser.parse_args(argv)
    if not args.url:
        parser.error("--url: required (or set CONTEXTADMIN_URL)")
    if not args.token:
        parser.error("--token: required (or set CONTEXTADMIN_TOKEN)")
    try:
        base_url_check(args.url)
        args.token = token_check(args.token)
    except ValueError as exc:
        parser.error(str(exc))
    for spool in args.spools:
        if spool.is_dir():
            parser.error(f"SPOOL_FILE: {spool} is a directory: give its spools, {spool}/*.jsonl")
        if not spool.is_file():
            parser.error(f"SPOOL_FILE: {spool}: no such file")
        if spool.suffix != ".jsonl":
            parser.error(f"SPOOL_FILE: {spool} is not a run's spool (SPOOL_DIR/<run_id>.jsonl)")
        started = (spool_read(spool).start or {}).get("run_id")
        if started is not None and started != spool.stem:  # a copy, or a renamed file
            parser.error(
                f"SPOOL_FILE: {spool} holds run {started} (its start line): a spool is found by "
                f"its run's id, so name it {spool.parent / f'{started}.jsonl'}"
            )
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    log = logging.getLogger(__name__)
    delivered = True
    for spool in args.spools:
        reporter = RunReporter(args.url, args.token, spool_dir=spool.parent)
        try:
            delivered = reporter.deliver(spool.stem, timeout=args.timeout) and delivered
        except SpoolInUse as exc:  # a live run: its runtime delivers it (not a failure here)
            log.warning("run %s: skipped: %s", spool.stem, exc)
        except ReportError as exc:
            log.error("run %s: not delivered: %s", spool.stem, exc)
            delivered = False
    return 0 if delivered else 1


if __name__ == "__main__":
    sys.exit(main())
