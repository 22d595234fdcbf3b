"""A Python client of memaudit's gRPC API (docs/python-client.md).

    from memaudit_client import Client

    with Client("memaudit.example.org:7400", ca="certs/ca.crt",
                cert="certs/team-demo.crt", key="certs/team-demo.key") as client:
        audit_id = client.submit("examples/quickstart.yaml")
        final = client.wait(audit_id, on_event=lambda e: print(f"{e.progress:.0%}"))
        report = client.report(audit_id)
        print({a["attack"]: a["auc"] for a in report["attacks"]})
"""

from .client import FINAL_STATES, Client, Event, new_request_id
from .convert import to_dict, to_json
from .errors import MemauditError, SpecError
from .spec import load_spec, parse_spec, spec_from_dict

__all__ = [
    "Client",
    "Event",
    "FINAL_STATES",
    "MemauditError",
    "SpecError",
    "load_spec",
    "new_request_id",
    "parse_spec",
    "spec_from_dict",
    "to_dict",
    "to_json",
]
