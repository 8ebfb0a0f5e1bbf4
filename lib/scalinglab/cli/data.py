"""`scalinglab data list|verify|path`: the dataset registry from the shell."""

from __future__ import annotations

import json

from scalinglab.cli import flags


def register(sub) -> None:
    p = sub.add_parser("data", help="list, verify or locate the registered datasets")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True, help="what to do")

    lst = dsub.add_parser("list", help="every dataset with its source, licence and local state")
    flags.add_json(lst, "one JSON array")
    lst.set_defaults(func=_list)

    ver = dsub.add_parser("verify", help="check files against their sha256 (exit 1 if any is corrupt or missing)")
    ver.add_argument("names", nargs="*", help="datasets to check (default: all)")
    ver.add_argument("--download", action="store_true", help="fetch missing files into the cache")
    flags.add_json(ver)
    ver.set_defaults(func=_verify)

    loc = dsub.add_parser("path", help="print the verified local path of one dataset")
    loc.add_argument("name")
    loc.set_defaults(func=_path)


def _list(args) -> int:
    from scalinglab import data

    rows = []
    for name, ds in data.registry().items():
        state, where = data.status(name)
        rows.append(dict(name=name, group=ds.group, state=state, description=ds.description,
                         url=ds.url, sha256=ds.sha256, licence=ds.licence,
                         path=where if state == "ok" else ds.path))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['state']:<7}  {r['description']}")
    return 0


def _verify(args) -> int:
    from scalinglab import data

    for name in args.names:
        data.get(name)  # unknown names are a user error before any work
    rows = data.verify(args.names or None, download=args.download)
    if args.json:
        print(json.dumps([dict(name=n, state=s, detail=d) for n, s, d in rows], indent=2))
    else:
        width = max(len(n) for n, _, _ in rows)
        for name, state, detail in rows:
            print(f"{name:<{width}}  {state:<7}  {detail}")
    # Absent files (never in an offline mirror) fail only when asked for by name.
    ok = {"ok"} if args.names else {"ok", "absent"}
    return 0 if all(s in ok for _, s, _ in rows) else 1


def _path(args) -> int:
    from scalinglab import data

    print(data.locate(args.name))
    return 0
