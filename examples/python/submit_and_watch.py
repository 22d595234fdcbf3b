#!/usr/bin/python3
"""Submits an audit spec to a running coordinator, shows its progress until it
ends, and prints each attack's AUC (membership audits) from the report.

    export PYTHONPATH=build/python   # or run the Python of a venv with the package
                                     # installed (docs/python-client.md, "Install")
    export MEMAUDIT_COORDINATOR=HOST:7400 MEMAUDIT_TLS_CA=certs/ca.crt \\
           MEMAUDIT_TLS_CERT=certs/team-demo.crt MEMAUDIT_TLS_KEY=certs/team-demo.key
    /usr/bin/python3 examples/python/submit_and_watch.py examples/quickstart.yaml \\
        --json results.json

Credentials come from the same environment variables as the memaudit CLI's
(docs/security.md). --cancel-after SECONDS cancels the audit that long after
submitting it. The spec is read by the coordinator as `memaudit submit` reads
it (Client.submit). Exit status as `memaudit submit --watch`: 0 the audit
succeeded, 1 it failed or was cancelled, 2 the spec or a request was refused,
3 the coordinator could not be reached.
"""

import argparse
import sys
import threading

import grpc

from memaudit_client import Client, MemauditError

BAD_INPUT = (
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.UNIMPLEMENTED,
)


class ProgressLine:
    """Prints a line to stderr whenever the progress changes: percent of
    training done, tasks, steps, the audit's state, and the event."""

    def __init__(self):
        self.last = None

    def __call__(self, event):
        line = (
            f"{event.progress:6.1%}  {event.tasks_done}/{event.tasks_total} tasks  "
            f"{event.steps_done}/{event.steps_total} steps  {event.state}"
        )
        if line != self.last or event.finished:
            detail = f": {event.message}" if event.message else ""
            print(f"{line}  ({event.type}{detail})", file=sys.stderr)
            self.last = line


def cancel_later(client, audit_id, seconds):
    def cancel():
        try:
            client.cancel(audit_id)
            print(f"audit {audit_id}: cancel sent", file=sys.stderr)
        except MemauditError as error:
            print(f"cancel: {error}", file=sys.stderr)

    timer = threading.Timer(seconds, cancel)
    timer.daemon = True
    timer.start()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="a YAML audit spec")
    parser.add_argument("--json", help="write the results (protobuf JSON) to this file")
    parser.add_argument("--cancel-after", type=float, metavar="SECONDS",
                        help="cancel the audit this long after submitting it")
    args = parser.parse_args()

    try:
        with Client.from_env() as client:
            audit_id = client.submit(args.spec)
            print(f"audit {audit_id} submitted", file=sys.stderr)
            if args.cancel_after is not None:
                cancel_later(client, audit_id, args.cancel_after)
            audit = client.wait(audit_id, on_event=ProgressLine())
            print(f"audit {audit_id} {audit['state']}"
                  f"{': ' + audit['error'] if audit['error'] else ''}", file=sys.stderr)
            if audit["state"] != "SUCCEEDED":
                return 1
            report = client.report(audit_id, json_path=args.json)
    except MemauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2 if error.code in BAD_INPUT else 3

    if report["attacks"]:
        print(f"{'attack':<32} {'AUC':>8} {'bal.acc':>8}")
        for attack in report["attacks"]:
            # Enum names in the API; the spec's (and the CLI's) lower-case name here.
            print(f"{attack['attack'].lower():<32} {attack['auc']:8.4f} {attack['balanced_accuracy']:8.4f}")
    else:
        print(f"audit {audit_id} ({report['kind']}): see the report for its results")
    if args.json:
        print(f"results written to {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
