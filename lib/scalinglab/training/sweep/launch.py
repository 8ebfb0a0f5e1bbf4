"""Running a sweep: one job trains one run (resuming from its checkpoint); launchers run the jobs
locally, in a process pool, or through submitit, and record each result.
"""

from __future__ import annotations

import os
import platform
import re
import secrets
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from scalinglab.version import __version__
from scalinglab.errors import UserError
from scalinglab.training.sweep.plan import (LAUNCHERS, Profile, RunSpec, check_preset, check_seeds, get_profile, plan,
                                           spec_to_dict)
from scalinglab.training.sweep.store import (check_identity, claim_next, connect, held_elsewhere, holder, lease_left,
                                             mark_for_retraining, record_result, register_plan, release, renew,
                                             spec_from_dict, summary_counts, sweep_meta)

# A claim's lease: how long a run stays another process's after its owner stops renewing it (a crash, a
# SIGKILL, a lost machine). The owner renews it every LEASE_S / 4 while the run trains. Tests shorten it
# with SCALINGLAB_SWEEP_LEASE_S (or run_sweep's lease_s).
LEASE_S = 120.0
LEASE_ENV = "SCALINGLAB_SWEEP_LEASE_S"


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


class ClaimLost(UserError):
    """The run's claim passed to another process (this one's lease expired): the job stopped."""


def _set_aside(path: Path) -> Path:
    """Move a damaged file out of the way (``<name>.corrupt``, numbered when taken); its new path."""
    for i in range(1000):
        aside = path.with_name(path.name + (".corrupt" if i == 0 else f".corrupt{i}"))
        if not aside.exists():
            os.replace(path, aside)
            return aside
    raise OSError(f"no free name to move {path} aside")


def run_job(spec_dict: dict, checkpoint: str, claim: dict | None = None) -> dict:
    """Train one run, resuming from (and finally saving to) ``checkpoint``; returns its result.
    Writes no database.

    ``claim`` ({"db": path, "owner": owner}): before writing each checkpoint the job checks that the run
    is still that owner's, and stops (:class:`ClaimLost`) when another process has taken it over. A
    checkpoint that cannot be resumed is moved aside (``<id>.pt.corrupt``) and the run starts over; the
    result's ``warnings`` say so."""
    import torch

    from scalinglab.training.model import GPTConfig
    from scalinglab.training.loop import CheckpointError, resolve_device, train

    spec = spec_from_dict(spec_dict)
    prof = get_profile(spec.profile)
    device = resolve_device(prof.device)
    if device == "cpu":
        torch.set_num_threads(prof.threads)
    _, train_tokens, val_tokens = load_tokens(prof)
    model_cfg = GPTConfig(**spec.model)
    train_cfg = spec.train
    ckpt = Path(checkpoint)
    meta = dict(run_id=spec.run_id, preset=spec.preset, profile=spec.profile, tokenizer=prof.tokenizer,
                n_non_embedding=spec.n_non_embedding, n_standard=spec.n_standard)
    commit = git_commit()  # the code this job loaded, before anyone commits during a long run
    where = f"{claim['db']}: run {spec.run_id}" if claim else f"run {spec.run_id}"

    def still_ours(step: int) -> None:
        try:
            now = holder(claim["db"], spec.run_id)
        except sqlite3.Error:  # the database is out of reach from here (another node): the launcher checks
            return
        if now != claim["owner"]:
            raise ClaimLost(f"{where}: the run's claim passed to {now or 'nobody'} at step {step}; stopped training it")

    warnings = []
    kw = dict(checkpoint=ckpt, meta=meta, on_checkpoint=still_ours if claim else None)
    try:
        res = train(model_cfg, train_cfg, train_tokens, val_tokens, **kw)
    except CheckpointError as exc:
        try:
            aside = _set_aside(ckpt)
        except OSError as err:
            raise UserError(f"{where}: {exc}, and it could not be moved aside ({err})") from None
        warnings.append(f"{where}: {exc}; moved it to {aside.name} and trained the run from the start")
        res = train(model_cfg, train_cfg, train_tokens, val_tokens, **kw)
    return dict(curve=res.curve, final_loss=res.final_loss, tokens=res.tokens, steps=res.steps,
                seconds=res.seconds, tokens_per_s=res.tokens_per_s, device=device_name(res.device),
                tokens_per_step=train_cfg.batch_size * model_cfg.seq_len, versions=versions(),
                git_commit=commit, checkpoint=str(ckpt), warnings=warnings)


# --- launchers -----------------------------------------------------------------------------

def checkpoint_path(db_path: Path, run_id: str) -> Path:
    """Where a run's checkpoint lives: ``<db>.runs/<run_id>.pt`` (the file name says which run it is); a run id
    no sweep writes (``../x``, from an edited database) is refused before it becomes a path."""
    from scalinglab.sweeps.store import check_run_id

    return db_path.with_name(db_path.name + ".runs") / f"{check_run_id(run_id, db_path)}.pt"


def new_owner() -> str:
    """A claim's owner: ``host:pid:token`` (the token tells apart two sweeps of one process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def lease_seconds(lease_s: float | None = None) -> float:
    """``lease_s``, else $SCALINGLAB_SWEEP_LEASE_S, else LEASE_S; refuses what is not a positive number."""
    raw = lease_s if lease_s is not None else os.environ.get(LEASE_ENV, LEASE_S)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise UserError(f"a claim's lease must be a positive number of seconds, got {raw!r}"
                        + (f" (from ${LEASE_ENV})" if lease_s is None and LEASE_ENV in os.environ else ""))
    return value


class _Heartbeat:
    """Renews this process's claims every lease/4 from a thread with its own connection, so that a run
    stays claimed while it trains (here, in a worker process or in a submitit job) and no longer."""

    def __init__(self, db_path: Path, owner: str, lease_s: float):
        self.db_path, self.owner, self.lease_s = db_path, owner, lease_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sweep-lease", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        con = sqlite3.connect(self.db_path, timeout=max(self.lease_s / 4, 1.0))
        try:
            while not self._stop.wait(self.lease_s / 4):
                try:
                    renew(con, self.owner, self.lease_s)
                except sqlite3.Error:  # busy or briefly unreachable: the next beat tries again
                    pass
        finally:
            con.close()


class _Claims:
    """This process's side of the claims: take the next run, record one, wait for runs held elsewhere."""

    def __init__(self, con: sqlite3.Connection, db_path: Path, owner: str, lease_s: float, max_runs: int | None,
                 on_record: Callable[[RunSpec, dict], None], warn: Callable[[str], None]):
        self.con, self.db_path, self.owner, self.lease_s = con, db_path, owner, lease_s
        self.max_runs, self.on_record, self.warn = max_runs, on_record, warn
        self.taken = 0
        self.said_waiting = False

    def full(self) -> bool:
        return self.max_runs is not None and self.taken >= self.max_runs

    def next(self) -> RunSpec | None:
        if self.full():
            return None
        spec = claim_next(self.con, self.owner, self.lease_s)
        self.taken += spec is not None
        return spec

    def others(self) -> dict[str, str]:
        """Unfinished runs other processes hold: worth waiting for (their lease may expire) unless max_runs is
        spent."""
        return {} if self.full() else held_elsewhere(self.con, self.owner)

    def idle(self) -> None:
        time.sleep(min(max(self.lease_s / 8, 0.2), 5.0))

    def job_args(self, spec: RunSpec) -> tuple:
        return (spec_to_dict(spec), str(checkpoint_path(self.db_path, spec.run_id)),
                dict(db=str(self.db_path), owner=self.owner))

    def record(self, spec: RunSpec, result: dict) -> None:
        for line in result.get("warnings", ()):
            self.warn(line)
        if record_result(self.con, spec, result, owner=self.owner):
            self.on_record(spec, result)
        else:
            self.warn(f"{self.db_path}: run {spec.run_id} was taken over or finished by another process "
                      "while this one trained it; its result here is not recorded")

    def lost(self, exc: ClaimLost) -> None:
        self.warn(str(exc))


def run_sweep(preset: str, profile: str, db_path: Path | str, *, launcher: str = "local",
              max_runs: int | None = None, progress: bool = True, executor: str | None = None,
              workers: int | None = None, on_finish: Callable[[RunSpec, dict], None] | None = None,
              seeds: int = 1, lease_s: float | None = None) -> dict:
    """Run (or resume) a sweep into ``db_path``; returns the counts of planned and finished runs.

    ``seeds=k`` trains every run of the grid with k seeds (:func:`plan`); on a finished one-seed database
    it trains only the new replicates.

    ``workers`` runs that many at once on this machine (default: the profile's); ``executor``
    picks submitit's cluster ("local", "debug", "slurm"; default: auto).

    Several processes may run one sweep into one database: each claims a run before training it
    (:mod:`~scalinglab.training.sweep.store`), so none is trained twice, and waits for the runs the
    others hold before returning (taking over those whose lease, ``lease_s`` seconds renewed while they
    train, runs out). ``max_runs`` counts the runs this process claims; it does not wait for others.
    Damaged rows of this sweep's runs (a spec that is not JSON, an impossible loss) are marked for
    retraining, with a line on stderr each."""
    from tqdm.auto import tqdm

    check_preset(preset)
    if launcher not in LAUNCHERS:
        raise UserError(f"unknown launcher {launcher!r}: use one of {', '.join(LAUNCHERS)}")
    if max_runs is not None and max_runs < 0:  # a negative slice would silently skip the last runs instead
        raise UserError(f"max_runs must be at least 0, got {max_runs}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UserError(f"workers must be a whole number of at least 1, got {workers!r}")
    prof = get_profile(profile)
    check_seeds(seeds)
    lease_s = lease_seconds(lease_s)
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = connect(db_path, identity=(preset, prof.name))  # a bad --db fails before the tokenizing
    try:
        check_identity(con, preset, prof.name)  # and so does another sweep's database
        tok, _, _ = load_tokens(prof)  # tokenize once here, not in every job
        register_plan(con, preset, prof, plan(preset, prof, tok.vocab_size, seeds), tok.vocab_size)
        everything = plan(preset, prof, tok.vocab_size, max(seeds, int(sweep_meta(con).get("seeds", 1))))
        notes = mark_for_retraining(con, {r.run_id: r for r in everything})
        counts = summary_counts(con)
        total = counts["planned"] - counts["finished"]
        bar = tqdm(total=total if max_runs is None else min(total, max_runs), desc=f"{preset}/{profile}",
                   unit="run", disable=not progress)

        def warn(line: str) -> None:
            (bar.write if progress else print)(line, file=sys.stderr)

        for line in notes:
            warn(line)
        if progress and prof.flops_per_s:  # a profile with a measured speed: say what the sweep will cost
            from scalinglab.training.sweep.plan import describe_cost

            warn(describe_cost(preset, profile, seeds))

        def recorded(spec: RunSpec, result: dict) -> None:
            bar.update(1)
            bar.set_postfix_str(f"{spec.run_id} loss {result['final_loss']:.3f}")
            if on_finish:
                on_finish(spec, result)

        owner = new_owner()
        claims = _Claims(con, db_path, owner, lease_s, max_runs, recorded, warn)
        workers = workers or prof.workers
        try:
            with _Heartbeat(db_path, owner, lease_s):
                if launcher == "local" and workers <= 1:
                    _serial(claims)
                elif launcher == "local":
                    _pool(claims, workers)
                else:
                    _submitit(claims, prof, executor)
        finally:
            release(con, owner)  # whatever stopped us: our unfinished runs are claimable at once
            bar.close()
        return summary_counts(con)
    finally:
        con.close()


def _wait_or_stop(claims: _Claims) -> bool:
    """Nothing claimable now: True (after a pause) while other processes hold unfinished runs."""
    others = claims.others()
    if not others:
        return False
    if not claims.said_waiting:   # once: a resume that only waits must not look hung
        claims.said_waiting = True
        claims.warn(f"waiting for {len(others)} run(s) claimed by another process "
                    f"({', '.join(sorted(set(others.values()))[:2])}); the first claim expires in "
                    f"{lease_left(claims.con, claims.owner):.0f} s unless renewed")
    claims.idle()
    return True


def _serial(claims: _Claims) -> None:
    """One run after another, in this process."""
    while True:
        spec = claims.next()
        if spec is None:
            if _wait_or_stop(claims):
                continue
            return
        try:
            result = run_job(*claims.job_args(spec))
        except ClaimLost as exc:
            claims.lost(exc)
            continue
        claims.record(spec, result)


def _pool(claims: _Claims, workers: int) -> None:
    """Several runs at once in worker processes (tiny models leave a GPU mostly idle); results come back here."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {}
        while True:
            while len(running) < workers and (spec := claims.next()) is not None:
                running[pool.submit(run_job, *claims.job_args(spec))] = spec
            if not running:
                if _wait_or_stop(claims):
                    continue
                return
            done, _ = wait(running, timeout=max(claims.lease_s / 8, 0.2), return_when=FIRST_COMPLETED)
            for fut in done:
                spec = running.pop(fut)
                try:
                    result = fut.result()
                except ClaimLost as exc:
                    claims.lost(exc)
                    continue
                claims.record(spec, result)


def _submitit(claims: _Claims, prof: Profile, cluster: str | None) -> None:
    """Submit every run this process can claim as its own job; record each as it completes (the jobs never
    write the DB). Runs other processes hold are waited for, and submitted when their lease runs out."""
    import submitit

    folder = claims.db_path.with_name(claims.db_path.name + ".submitit")
    ex = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    ex.update_parameters(timeout_min=24 * 60, cpus_per_task=prof.threads, nodes=1, tasks_per_node=1,
                         gpus_per_node=1 if prof.device == "cuda" else 0)
    jobs, failed, submitted = {}, [], 0
    try:
        while True:
            while (spec := claims.next()) is not None:
                job = ex.submit(run_job, *claims.job_args(spec))
                jobs[job.job_id] = (job, spec)
                submitted += 1
            for job_id in [j for j, (job, _) in jobs.items() if job.done()]:
                job, spec = jobs.pop(job_id)
                try:
                    result = job.result()
                except Exception as exc:  # one failed run must not stop the others being recorded
                    line = _failure_line(exc)  # submitit hands back the job's trace, not its exception
                    if isinstance(exc, ClaimLost) or f"{ClaimLost.__name__}: " in str(exc):
                        claims.warn(f"{claims.db_path}: run {spec.run_id}: {line}")
                    else:  # still claimed here, so not resubmitted; released (pending) when the sweep stops
                        failed.append(f"{spec.run_id} (job {job_id}: {line})")
                    continue
                claims.record(spec, result)
            if not jobs and not claims.others():
                break
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
        raise UserError(f"{len(failed)} of {submitted} runs failed and stay pending (logs in {folder}; rerun to "
                        f"retry): {'; '.join(failed)}")


def _failure_line(exc: Exception) -> str:
    """The exception line of a failed job's trace (submitit wraps it among log paths), else its first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b", ln)]
    return (raised[-1] if raised else lines[0] if lines else type(exc).__name__)[:200]


