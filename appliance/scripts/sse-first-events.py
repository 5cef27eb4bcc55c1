"""The first event of each Server-Sent Events stream against the schema the OpenAPI
document declares for it.

schemathesis cannot check a stream that never ends (it waits for a whole response), so
api-conformance.sh runs this beside it: for GET /api/v1/stream and GET
/api/v1/results/stream it reads the served document's `x-sse-events` (event name -> the
JSON Schema of its `data`, and `id` where the event carries one), opens the stream,
reads its first event (WHATWG HTML, "Server-sent events": `event:`, `id:`, `data:`
lines up to a blank line) and checks: status 200, content type text/event-stream, the
event's name is declared, its data is JSON valid against the declared schema (JSON
Schema 2020-12, as OpenAPI 3.1 uses; `#/components/schemas/...` resolved in the
document), and its id is there exactly when the document declares one, in the declared
form (`snapshot`: a whole number; `result`: RUN:SEQ).

Usage: sse-first-events.py BASE_URL TOKEN   (exit 1 naming each broken rule)
"""

import json
import re
import sys
import urllib.request

import jsonschema

STREAMS = ["/api/v1/stream", "/api/v1/results/stream"]
# The id forms the document describes in words, as patterns.
ID_FORMS = {"snapshot": r"^[0-9]+$", "result": r"^[0-9]+:[0-9]+$"}
TIMEOUT_S = 60


def first_event(base, token, path):
    """(status, content type, {"event", "id", "data"}) of the stream's first event."""
    req = urllib.request.Request(
        base + path,
        headers={"Authorization": "Bearer " + token, "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
        event = {"event": "message", "id": None, "data": []}
        for raw in r:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line == "":
                if event["data"]:
                    event["data"] = "\n".join(event["data"])
                    return r.status, r.headers.get("content-type", ""), event
                event = {"event": "message", "id": None, "data": []}
                continue
            if line.startswith(":"):
                continue  # a comment (keep-alive)
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                event["data"].append(value)
            elif field in ("event", "id"):
                event[field] = value
    raise RuntimeError(f"{path}: the stream ended before its first event")


def check(doc, base, token, path):
    """The broken rules of the stream's first event, in words."""
    declared = doc["paths"][path]["get"]["responses"]["200"].get("x-sse-events")
    if not declared:
        return [f"{path}: the document declares no x-sse-events"]
    status, ctype, ev = first_event(base, token, path)
    broken = []
    if status != 200 or not ctype.startswith("text/event-stream"):
        broken.append(f"{path}: {status} {ctype}, not 200 text/event-stream")
    name = ev["event"]
    if name not in declared:
        return broken + [f"{path}: first event {name!r} is not declared ({sorted(declared)})"]
    spec = declared[name]
    try:
        data = json.loads(ev["data"])
    except ValueError as e:
        return broken + [f"{path}: {name} data is not JSON: {e}"]
    # The event's schema as the root, the document's components beside it, so that
    # "#/components/schemas/X" resolves as in the document.
    schema = dict(spec["data"], components=doc.get("components", {}))
    validator = jsonschema.Draft202012Validator(schema)
    for err in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
        at = "/" + "/".join(str(p) for p in err.absolute_path)
        broken.append(f"{path}: {name} data at {at}: {err.message[:300]}")
    if "id" in spec:
        form = ID_FORMS.get(name)
        if ev["id"] is None:
            broken.append(f"{path}: {name} has no id; the document declares {spec['id']!r}")
        elif form and not re.match(form, ev["id"]):
            broken.append(f"{path}: {name} id {ev['id']!r} is not {spec['id']!r}")
    elif ev["id"] is not None:
        broken.append(f"{path}: {name} has id {ev['id']!r}; the document declares none")
    if not broken:
        print(f"sse-first-events: {path}: first event {name!r} (id {ev['id']}) matches its schema")
    return broken


def main():
    base, token = sys.argv[1], sys.argv[2]
    doc = json.load(urllib.request.urlopen(base + "/openapi.json", timeout=30))
    broken = [b for path in STREAMS for b in check(doc, base, token, path)]
    for b in broken:
        print("sse-first-events:", b, file=sys.stderr)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
