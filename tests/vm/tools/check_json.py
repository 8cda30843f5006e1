#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Validates a JSON document against the subset of JSON Schema the tools'
# schema files use (type, required, properties, additionalProperties, items,
# enum, minimum, local $ref). usage: check_json.py SCHEMA DOCUMENT
import json
import sys

TYPES = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def check(root, s, v, where, errors):
    if "$ref" in s:
        check(root, root["$defs"][s["$ref"].split("/")[-1]], v, where, errors)
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(TYPES[t](v) for t in types):
            errors.append(f"{where}: {v!r} is not {types}")
            return
    if "enum" in s and v not in s["enum"]:
        errors.append(f"{where}: {v!r} not in {s['enum']}")
    if "minimum" in s and TYPES["number"](v) and v < s["minimum"]:
        errors.append(f"{where}: {v} < {s['minimum']}")
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                errors.append(f"{where}: missing {k}")
        for k, item in v.items():
            if k in s.get("properties", {}):
                check(root, s["properties"][k], item, f"{where}.{k}", errors)
            elif s.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected key {k}")
            elif isinstance(s.get("additionalProperties"), dict):
                check(root, s["additionalProperties"], item, f"{where}.{k}", errors)
    if isinstance(v, list) and "items" in s:
        for i, item in enumerate(v):
            check(root, s["items"], item, f"{where}[{i}]", errors)


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        doc = json.load(f)
    errors = []
    check(schema, schema, doc, "$", errors)
    for e in errors:
        print(f"check_json: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
