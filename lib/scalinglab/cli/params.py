"""`scalinglab params`: parameter counts and FLOPs per token of one decoder."""

from __future__ import annotations

import json

from scalinglab.cli import flags


def register(sub) -> None:
    p = sub.add_parser(
        "params",
        help="count a decoder's parameters (Kaplan's, standard, total) and FLOPs per token",
        description="Parameter counts under Kaplan's (non-embedding), the standard (+ output head) and the "
                    "total convention, and training FLOPs per token. The counted tensors are listed in "
                    "scalinglab.accounting.decoder.",
    )
    p.add_argument("--width", type=int, required=True, help="model width d_model")
    p.add_argument("--depth", type=int, required=True, help="number of layers")
    p.add_argument("--vocab", type=int, required=True, help="vocabulary size")
    p.add_argument("--seq", type=int, default=1024, help="sequence length (default 1024)")
    p.add_argument("--mlp", choices=("gelu", "swiglu"), default="gelu",
                   help="gelu: 4·width hidden; swiglu: 256·ceil((8·width/3)/256) hidden, as OpenLM")
    p.add_argument("--tied", action="store_true", help="the output head shares the token embedding")
    p.add_argument("--no-bias", action="store_true", help="linear layers and LayerNorms without biases")
    flags.add_json(p, "print one JSON object")
    p.set_defaults(func=_params)


def _params(args) -> int:
    from scalinglab.accounting.decoder import count_params, flops_per_token

    kw = dict(seq_len=args.seq, mlp=args.mlp, tied=args.tied, bias=not args.no_bias)
    counts = count_params(args.width, args.depth, args.vocab, **kw)
    fpt = flops_per_token(args.width, args.depth, args.vocab, **kw)
    out = dict(non_embedding=counts.non_embedding, standard=counts.standard, total=counts.total,
               flops_per_token=fpt.to_dict(), mlp_hidden=counts.mlp_hidden, kaplan_approx=counts.kaplan_approx)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"non_embedding  {counts.non_embedding:>15,}   Kaplan's N (12·L·d² = {counts.kaplan_approx:,})")
    print(f"standard       {counts.standard:>15,}   + output head (Porian's N)")
    added = "positional embedding (the input embedding is the head)" if args.tied else "input and positional embeddings"
    print(f"total          {counts.total:>15,}   + {added}")
    for name, value in fpt.to_dict().items():
        print(f"FLOPs/token {name:<15}{value:>12,}")
    return 0
