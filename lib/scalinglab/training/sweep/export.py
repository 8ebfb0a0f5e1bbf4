"""A sweep's finished models as a small folder to commit or share: half-precision weights, the tokenizer, a manifest.

A sweep keeps each finished run's final state in ``<db>.runs/<run_id>.pt``: float32 weights plus Adam's two
moments, about 12 bytes a parameter. :func:`export_models` writes only the weights, in float16 (2 bytes a
parameter), with the run's meta, so ``scalinglab.training.model.load_checkpoint`` (and the inverse-scaling
scorer, ``scalinglab.inverse_scaling.adapters.load_checkpoint_lm``) reads them as they are. Rounding to float16
moves the logits by about 1e-3 nats at these sizes; the manifest records each model's validation loss from
training, so a reader can check the exported weights against it.

The BPE tokenizer the models were trained with goes in the folder as ``tokenizer.json``, so scoring them needs no
corpus and no retraining of the tokenizer. ``manifest.json`` lists every file with its size and sha256.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from scalinglab.data import sha256_of
from scalinglab.errors import OptionError, UserError

MANIFEST_VERSION = 1


_FAMILY = ("run_id", "width", "depth", "n_non_embedding", "n_standard", "n_total", "budget", "final_loss",
           "tokens", "seconds", "git_commit", "profile", "status")


def _family_rows(db_path: Path) -> list[tuple]:
    """Every planned run, smallest model first: the values of ``_FAMILY``."""
    from scalinglab.sweeps import SweepStore

    runs = sorted(SweepStore(db_path).runs(), key=lambda r: (r["n_standard"], r["run_id"]))
    return [tuple(r[c] for c in _FAMILY) for r in runs]


def describe_family(db_path: Path | str) -> str:
    """What a family of models (preset ``optimal``) holds, one line a model: what `scalinglab sweep` prints for it
    instead of an isoFLOP report, which a family with one budget per model does not have."""
    rows = _family_rows(Path(db_path))
    done = [r for r in rows if r[-1] == "finished"]
    # several runs of one shape (preset schedules: one per schedule and seed) are told apart by their run ids
    by_id = len({(r[1], r[2]) for r in rows}) < len(rows)
    wide = max([len(r[0]) for r in rows] + [5]) if by_id else 8
    lines = [f"{Path(db_path).name}: {len(done)} of {len(rows)} {'runs' if by_id else 'models'} finished",
             f"{'run' if by_id else 'model':>{wide}} {'N non-emb':>10} {'N std':>9} {'tokens':>11} {'C (FLOP)':>10} "
             f"{'val loss':>9} {'train s':>8}"]
    for (run_id, w, d, n_ne, n_std, _, budget, loss, tokens, secs, _, _, status) in rows:
        head = f"{run_id if by_id else f'{w}x{d}':>{wide}} {n_ne:>10,} {n_std:>9,}"
        if status == "finished":
            lines.append(f"{head} {tokens:>11,} {budget:>10.3g} {loss:>9.3f} {secs:>8.0f}")
        else:
            lines.append(f"{head} {'':>11} {budget:>10.3g} {status:>9}")
    return "\n".join(lines)


def export_models(db_path: Path | str, out: Path | str) -> dict:
    """Write every finished run of the sweep at ``db_path`` to ``out`` (created): ``<run_id>.pt`` in float16,
    ``tokenizer.json`` (for BPE tokenizers) and ``manifest.json``; returns the manifest."""
    from scalinglab.data import cache_root
    from scalinglab.training import corpus
    from scalinglab.training.model import load_checkpoint, save_checkpoint
    from scalinglab.training.sweep.launch import checkpoint_path
    from scalinglab.training.sweep.plan import get_profile

    db_path, out = Path(db_path), Path(out)
    rows = [r for r in _family_rows(db_path) if r[-1] == "finished"]
    if not rows:
        raise UserError(f"{db_path}: no finished runs to export")
    if out.exists() and not out.is_dir():   # mkdir raised FileExistsError as a traceback
        raise OptionError(f"{{export}} {out}: is a file, not a folder; give a folder to write the models in", "export")
    out.mkdir(parents=True, exist_ok=True)
    models, tokenizers = [], set()
    for (run_id, width, depth, n_ne, n_std, n_tot, budget, loss, tokens, seconds, commit, profile, _) in rows:
        model, meta = load_checkpoint(checkpoint_path(db_path, run_id))
        target = out / f"{run_id}.pt"
        save_checkpoint(target, model.half(), meta)
        tokenizers.add(meta.get("tokenizer"))
        models.append(dict(file=target.name, run_id=run_id, width=width, depth=depth, n_non_embedding=n_ne,
                           n_standard=n_std, n_total=n_tot, compute=budget, tokens=tokens, val_loss=loss,
                           train_seconds=seconds, git_commit=commit, profile=profile,
                           bytes=target.stat().st_size, sha256=sha256_of(target)))
        del model
    if len(tokenizers) != 1:
        raise UserError(f"{db_path}: its runs name {len(tokenizers)} tokenizers ({sorted(map(str, tokenizers))}); "
                        "export needs one")
    spec = tokenizers.pop()
    manifest = dict(version=MANIFEST_VERSION, database=db_path.name, tokenizer=spec, models=models)
    if spec and spec.startswith("bpe"):
        src = cache_root() / "tokenizers" / f"{corpus.CORPUS}-{spec}.json"
        if not src.is_file():  # trained on first use: make it now, from the corpus mirror
            from scalinglab.training.tokenizer import get_tokenizer

            get_tokenizer(spec)
        shutil.copyfile(src, out / "tokenizer.json")
        manifest["tokenizer_file"] = dict(file="tokenizer.json", sha256=sha256_of(out / "tokenizer.json"))
    profile = get_profile(rows[0][11])
    manifest["seq_len"] = profile.seq_len
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def read_manifest(folder: Path | str) -> dict:
    """An exported folder's manifest, each listed file checked against its sha256 (a one-line error if not)."""
    folder = Path(folder)
    path = folder / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
        version, models = manifest["version"], manifest["models"]
    except FileNotFoundError:
        raise UserError(f"{folder}: no manifest.json (not an exported model folder)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a model manifest ({type(exc).__name__}: {exc})") from None
    if version != MANIFEST_VERSION:
        raise UserError(f"{path}: manifest version {version!r}; this scalinglab reads version {MANIFEST_VERSION}")
    files = [(m["file"], m["sha256"]) for m in models]
    if "tokenizer_file" in manifest:
        files.append((manifest["tokenizer_file"]["file"], manifest["tokenizer_file"]["sha256"]))
    for name, sha in files:
        f = folder / name
        if not f.is_file():
            raise UserError(f"{f}: listed in the manifest but missing")
        if sha256_of(f) != sha:
            raise UserError(f"{f}: sha256 differs from the manifest's (changed or damaged)")
    return manifest
