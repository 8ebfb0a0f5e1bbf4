"""Running a sweep: one job trains one run (resuming from its checkpoint); launchers run the jobs
locally, in a process pool, or through submitit, and record each result.
"""

from __future__ import annotations

import platform
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from scalinglab import __version__
from scalinglab.errors import UserError
from scalinglab.training.sweep.plan import LAUNCHERS, Profile, RunSpec, check_preset, check_seeds, get_profile, plan
from scalinglab.training.sweep.store import connect, pending, record_result, register_plan, spec_from_dict, summary_counts


# --- one job -------------------------------------------------------------------------------

def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = dict(python=platform.python_version(), scalinglab=__version__)
    for pkg in ("torch", "numpy", "tokenizers", "tiktoken"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def git_commit() -> str:
    """HEAD of the checkout the library runs from, with '+dirty' when files differ (or 'unknown')."""
    root = next((p for p in Path(__file__).resolve().parents if (p / "lib" / "scalinglab").is_dir()), Path.cwd())
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("+dirty" if dirty else "")) if head else "unknown"


def device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda:{torch.cuda.get_device_name(0)}"
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            name = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), name)
    except OSError:
        pass
    threads = torch.get_num_threads()
    return f"cpu:{name} ({threads} thread{'s' if threads > 1 else ''})"


def load_tokens(prof: Profile):
    """(tokenizer, train tokens, val tokens) from the cache, tokenizing on first use."""
    from scalinglab.training.tokenizer import get_tokenizer, token_cache

    tok = get_tokenizer(prof.tokenizer)
    return (tok, token_cache(tok, "train", max_bytes=prof.train_bytes),
            token_cache(tok, "val", max_bytes=prof.val_bytes))


def run_job(spec_dict: dict, checkpoint: str) -> dict:
    """Train one run, resuming from (and finally saving to) ``checkpoint``; returns its result.
    Writes no database."""
    import torch

    from scalinglab.training.model import GPTConfig
    from scalinglab.training.loop import TrainConfig, resolve_device, train

    spec = spec_from_dict(spec_dict)
    prof = get_profile(spec.profile)
    device = resolve_device(prof.device)
    if device == "cpu":
        torch.set_num_threads(prof.threads)
    _, train_tokens, val_tokens = load_tokens(prof)
    model_cfg = GPTConfig(**spec.model)
    train_cfg = TrainConfig(**spec.train)
    ckpt = Path(checkpoint)
    meta = dict(run_id=spec.run_id, preset=spec.preset, profile=spec.profile, tokenizer=prof.tokenizer,
                n_non_embedding=spec.n_non_embedding, n_standard=spec.n_standard)
    commit = git_commit()  # the code this job loaded, before anyone commits during a long run
    res = train(model_cfg, train_cfg, train_tokens, val_tokens, checkpoint=ckpt, meta=meta)
    return dict(curve=res.curve, final_loss=res.final_loss, tokens=res.tokens, steps=res.steps,
                seconds=res.seconds, tokens_per_s=res.tokens_per_s, device=device_name(res.device),
                tokens_per_step=train_cfg.batch_size * model_cfg.seq_len, versions=versions(),
                git_commit=commit, checkpoint=str(ckpt))


# --- launchers -----------------------------------------------------------------------------

def checkpoint_path(db_path: Path, run_id: str) -> Path:
    """Where a run's checkpoint lives: ``<db>.runs/<run_id>.pt`` (the file name says which run it is)."""
    return db_path.with_name(db_path.name + ".runs") / f"{run_id}.pt"


def run_sweep(preset: str, profile: str, db_path: Path | str, *, launcher: str = "local",
              max_runs: int | None = None, progress: bool = True, executor: str | None = None,
              workers: int | None = None, on_finish: Callable[[RunSpec, dict], None] | None = None,
              seeds: int = 1) -> dict:
    """Run (or resume) a sweep into ``db_path``; returns the counts of planned and finished runs.

    ``seeds=k`` trains every run of the grid with k seeds (:func:`plan`); on a finished one-seed database
    it trains only the new replicates.

    ``workers`` runs that many at once on this machine (default: the profile's); ``executor``
    picks submitit's cluster ("local", "debug", "slurm"; default: auto)."""
    from tqdm.auto import tqdm

    check_preset(preset)
    if launcher not in LAUNCHERS:
        raise UserError(f"unknown launcher {launcher!r}: use one of {', '.join(LAUNCHERS)}")
    if max_runs is not None and max_runs < 0:  # a negative slice would silently skip the last runs instead
        raise UserError(f"max_runs must be at least 0, got {max_runs}")
    prof = get_profile(profile)
    check_seeds(seeds)
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = connect(db_path)  # a bad --db fails before the tokenizing
    tok, _, _ = load_tokens(prof)  # tokenize once here, not in every job
    register_plan(con, preset, prof, plan(preset, prof, tok.vocab_size, seeds), tok.vocab_size)
    todo = pending(con)[:max_runs]
    bar = tqdm(total=len(todo), desc=f"{preset}/{profile}", unit="run", disable=not progress)

    def finish(spec: RunSpec, result: dict) -> None:
        record_result(con, spec, result)
        bar.update(1)
        bar.set_postfix_str(f"{spec.run_id} loss {result['final_loss']:.3f}")
        if on_finish:
            on_finish(spec, result)

    workers = workers or prof.workers
    if launcher == "local" and workers <= 1:
        for spec in todo:
            finish(spec, run_job(asdict(spec), str(checkpoint_path(db_path, spec.run_id))))
    elif launcher == "local":
        _pool(todo, db_path, workers, finish)
    else:
        _submitit(todo, db_path, prof, finish, executor)
    bar.close()
    out = summary_counts(con)
    con.close()
    return out


def _pool(todo: list[RunSpec], db_path: Path, workers: int, finish) -> None:
    """Several runs at once in worker processes (tiny models leave a GPU mostly idle); results come back here."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_job, asdict(s), str(checkpoint_path(db_path, s.run_id))): s for s in todo}
        for fut in as_completed(futures):
            finish(futures[fut], fut.result())


def _submitit(todo: list[RunSpec], db_path: Path, prof: Profile, finish, cluster: str | None) -> None:
    """Submit every pending run as its own job; record each as it completes (the jobs never touch the DB)."""
    import submitit

    folder = db_path.with_name(db_path.name + ".submitit")
    ex = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    ex.update_parameters(timeout_min=24 * 60, cpus_per_task=prof.threads, nodes=1, tasks_per_node=1,
                         gpus_per_node=1 if prof.device == "cuda" else 0)
    jobs, failed = {}, []
    try:
        for spec in todo:
            job = ex.submit(run_job, asdict(spec), str(checkpoint_path(db_path, spec.run_id)))
            jobs[job.job_id] = (job, spec)
        while jobs:
            for job_id in [j for j, (job, _) in jobs.items() if job.done()]:
                job, spec = jobs.pop(job_id)
                try:
                    result = job.result()
                except Exception as exc:  # one failed run must not stop the others being recorded
                    failed.append(f"{spec.run_id} (job {job_id}: {_failure_line(exc)})")
                    continue
                finish(spec, result)
            if jobs:
                time.sleep(0.5)
    finally:
        # Left early (Ctrl-C, an error recording a result): cancel the jobs still queued or running, so
        # that rerunning the sweep, which resubmits every unfinished run, never has two jobs training into
        # one checkpoint. Their checkpoints stay, and the resubmitted runs resume from them.
        for job, _ in jobs.values():
            try:
                job.cancel(check=False)
            except Exception:  # noqa: BLE001 - best effort: the job may have just ended
                pass
    if failed:
        raise UserError(f"{len(failed)} of {len(todo)} runs failed and stay pending (logs in {folder}; rerun to "
                        f"retry): {'; '.join(failed)}")


def _failure_line(exc: Exception) -> str:
    """The exception line of a failed job's trace (submitit wraps it among log paths), else its first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b", ln)]
    return (raised[-1] if raised else lines[0] if lines else type(exc).__name__)[:200]


