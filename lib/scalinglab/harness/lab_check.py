"""`make lab-check`: every notebook opened, saved and run (Run All) in JupyterLab, in headless Chromium.

    python -m scalinglab.harness.lab_check [--screenshots results/lab-check] [NOTEBOOK ...]

For each notebook (default: notebooks/NN_*.ipynb) it
1. opens it and saves it without running: the file must come back byte-identical (a committed notebook carries
   exactly what Lab writes, so opening one never modifies it). A difference is summarised, the original bytes
   are put back, and the notebook fails;
2. restarts the kernel and runs all cells (the smoke profile), waits until the kernel is idle and every code
   cell has run (or one has failed), and fails on any error output, any stderr stream (warnings included), or a
   count of image outputs different from the number of PNGs the run saved under $SCALINGLAB_RESULTS/<stem>/;
3. saves a full-length screenshot, NN_name.png, and prints one line: cells, figures shown vs saved, errors,
   stderr, seconds. Tracked notebooks are restored from their original bytes at the end in any case.

Settings that are not obvious:
- Chromium is Debian's (/usr/bin/chromium), launched by path: no browser can be downloaded here. --no-sandbox
  because we run as root; --disable-quic, --disable-background-networking, --disable-component-update and
  --disable-sync keep it off the network; a fresh user-data-dir keeps runs independent.
- JupyterLab runs on 127.0.0.1 only, with no token (the browser is driven by script; it lives for one check),
  and --allow-root as root. JUPYTER_CONFIG_DIR is a temporary folder, so the user's Jupyter config plays no part.
  ``expose_app_in_browser`` gives the page ``window.jupyterapp``, so commands and the notebook model are driven
  directly instead of by clicking. Settings, workspaces and checkpoints live in a temporary folder: autosave
  off (the run must not write the tracked file), windowing "none" (every cell is in the DOM, so images are
  counted whether or not they were scrolled into view), no restart dialog, no news or update checks.
- MPLBACKEND is removed, as under `make lab`: a stray plt.show() must show, and so be counted against the PNGs.
- Figures are counted twice: image outputs in the notebook model, and <img> elements rendered in the DOM
  (each must have decoded: naturalWidth > 0). Both must equal the PNGs saved.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scalinglab.harness.workbook import PROFILE_ENV, RESULTS_ENV, project_root

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/sessionDialogs": {"skipKernelRestartDialog": True},
    "@jupyterlab/apputils-extension/notification": {"checkForUpdates": False, "fetchNews": "false"},
}
SCREENSHOT_MAX_PX = 30000  # Chromium's screenshots grow unreliable past ~32k px; longer pages are cut (and said so)

# Opens `path`, waits for its kernel; returns whether opening alone marked the model modified.
JS_OPEN = """async (path) => {
  const app = window.jupyterapp; await app.restored;
  const nb = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await nb.context.ready; await nb.sessionContext.ready;
  const kernel = nb.sessionContext.session.kernel; await kernel.info;
  while (kernel.status !== 'idle') await new Promise(r => setTimeout(r, 100));
  await new Promise(r => setTimeout(r, 500));  // let the kernel's language_info reach the model
  window.__nb = nb; return nb.context.model.dirty;
}"""
JS_RUN = """async () => {
  const app = window.jupyterapp; window.__ran = undefined;
  await app.commands.execute('notebook:clear-all-cell-outputs');  // executionCount null: "has run" means this run
  // Lab 4.6 resolves this after the run (false when a cell failed); older versions right after the restart.
  app.commands.execute('notebook:restart-run-all').then(r => { window.__ran = r; },
                                                        e => { window.__ran = 'Run All failed: ' + e; });
}"""
JS_DONE = """() => {
  const nb = window.__nb; if (window.__ran === undefined) return false;
  if (nb.sessionContext.session.kernel.status !== 'idle') return false;
  if ([...nb.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'))) return false;
  const code = [...nb.model.cells].filter(c => c.type === 'code' && c.sharedModel.getSource().trim());
  const failed = code.some(c => c.outputs.toJSON().some(o => o.output_type === 'error'));
  return failed || code.every(c => c.executionCount !== null);
}"""
JS_COLLECT = """() => {
  const nb = window.__nb, cells = [], node = nb.content.node;
  const outer = node.querySelector('.jp-WindowedPanel-outer') || node;  // the element that scrolls
  for (const c of nb.model.cells) if (c.type === 'code')
    cells.push({count: c.executionCount, empty: !c.sharedModel.getSource().trim(), outputs: c.outputs.toJSON()});
  const imgs = [...nb.node.querySelectorAll('.jp-OutputArea .jp-RenderedImage img')];
  return {cells, ran: window.__ran, dom: imgs.length,
          undecoded: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,
          height: innerHeight - outer.clientHeight + outer.scrollHeight};  // the window that shows every cell
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    env.update({PROFILE_ENV: "smoke", RESULTS_ENV: str(tmp / "results"), "JUPYTER_CONFIG_DIR": str(tmp / "config"),
                "JUPYTER_RUNTIME_DIR": str(tmp / "runtime")})
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The kernels run in notebooks/: relative paths would point elsewhere there.
    for var in ("SCALINGLAB_DATA_MIRROR", "PYTHONPATH"):
        if env.get(var):
            env[var] = os.pathsep.join(str(Path(p).resolve()) for p in env[var].split(os.pathsep) if p)
    return env


def start_lab(root: Path, tmp: Path, log) -> tuple[subprocess.Popen, str]:
    settings = tmp / "settings"
    for plugin, values in LAB_SETTINGS.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = free_port()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
           f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
           f"--FileCheckpoints.checkpoint_dir={tmp / 'checkpoints'}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, env=lab_env(tmp), stdout=log, stderr=subprocess.STDOUT, cwd=root)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(f"{base}/api/status", timeout=2):
                return proc, base
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"JupyterLab did not answer on {base}; see {log.name}")


def describe_diff(before: bytes, after: bytes) -> list[str]:
    """What opening and saving changed, in a few lines (keys, not values, where values are long)."""
    a, b = json.loads(before), json.loads(after)
    out = []
    for key in ("nbformat", "nbformat_minor"):
        if a.get(key) != b.get(key):
            out.append(f"{key}: {a.get(key)} -> {b.get(key)}")
    ma, mb = a.get("metadata", {}), b.get("metadata", {})
    for key in sorted(set(ma) | set(mb)):
        if ma.get(key) != mb.get(key):
            out.append(f"metadata.{key}: {json.dumps(ma.get(key))[:120]} -> {json.dumps(mb.get(key))[:120]}")
    if len(a["cells"]) != len(b["cells"]):
        out.append(f"cells: {len(a['cells'])} -> {len(b['cells'])}")
    changed: dict[str, int] = {}
    for ca, cb in zip(a["cells"], b["cells"]):
        for key in sorted(set(ca) | set(cb)):
            if key == "metadata":
                for mk in sorted(set(ca.get(key, {})) | set(cb.get(key, {}))):
                    if ca.get(key, {}).get(mk) != cb.get(key, {}).get(mk):
                        name = f"cell metadata.{mk} {'dropped' if mk not in cb[key] else 'changed'}"
                        changed[name] = changed.get(name, 0) + 1
            elif ca.get(key) != cb.get(key):
                changed[f"cell {key}"] = changed.get(f"cell {key}", 0) + 1
    out += [f"{name}: {n} cells" for name, n in changed.items()]
    if not out:
        out.append("same JSON, other bytes (indentation, key order, escaping or trailing newline)")
    return out


def check_notebook(ctx, base: str, root: Path, nb: Path, original: bytes, args, results: Path) -> bool:
    rel = nb.relative_to(root).as_posix()
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    problems, t0 = [], time.perf_counter()
    try:
        page.goto(f"{base}/lab?reset")
        page.wait_for_function("() => window.jupyterapp !== undefined")
        dirty = page.evaluate(JS_OPEN, rel)
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        saved = nb.read_bytes()
        if args.saved_dir:
            args.saved_dir.mkdir(parents=True, exist_ok=True)
            (args.saved_dir / nb.name).write_bytes(saved)
        if saved != original:
            nb.write_bytes(original)
            problems.append("open+save changed the file" + (" (opening marked it modified)" if dirty else ""))
            print(f"   {nb.stem}: open+save changed the file:\n     " + "\n     ".join(describe_diff(original, saved)))
        if args.open_save_only:
            print(f"{nb.stem}: open+save {'identical' if saved == original else 'CHANGED'}", flush=True)
            return saved == original
        page.evaluate(JS_RUN)
        page.wait_for_function(JS_DONE, timeout=args.timeout * 1000, polling=1000)
        state = page.evaluate(JS_COLLECT)
        seconds = time.perf_counter() - t0
        code = [c for c in state["cells"] if not c["empty"]]
        ran = sum(c["count"] is not None for c in code)
        outputs = [o for c in state["cells"] for o in c["outputs"]]
        errors = [o for o in outputs if o["output_type"] == "error"]
        stderr = [o for o in outputs if o["output_type"] == "stream" and o.get("name") == "stderr"]
        shown = sum("image/png" in o.get("data", {}) for o in outputs)
        saved_pngs = len(list((results / nb.stem).rglob("*.png")))
        if ran < len(code):
            problems.append(f"{len(code) - ran} cells did not run")
        if isinstance(state["ran"], str):
            problems.append(state["ran"][:200])
        problems += [f"error {o['ename']}: {o['evalue'][:150]}" for o in errors]
        for o in stderr:
            text = "".join(o["text"]) if isinstance(o["text"], list) else o["text"]
            problems.append(f"stderr: {text.strip().splitlines()[0][:150] if text.strip() else repr(text[:40])}")
        if not shown == state["dom"] == saved_pngs:
            problems.append(f"figures: {shown} image outputs, {state['dom']} rendered, {saved_pngs} PNGs saved")
        if state["undecoded"]:
            problems.append(f"{state['undecoded']} images did not decode")
        if args.screenshots:
            shoot(page, state["height"], args.screenshots / f"{nb.stem}.png")
        print(f"{nb.stem}: cells {ran}/{len(code)}, figures shown {shown} (rendered {state['dom']}) vs saved "
              f"{saved_pngs}, errors {len(errors)}, stderr {len(stderr)}, {seconds:.0f} s: "
              f"{'FAIL' if problems else 'ok'}", flush=True)
    except Exception as exc:  # a timeout or a page that never opened: this notebook fails, the others still run
        problems.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        print(f"{nb.stem}: FAIL ({time.perf_counter() - t0:.0f} s)", flush=True)
        if args.screenshots:
            try:
                shoot(page, None, args.screenshots / f"{nb.stem}.png")
            except Exception:  # the screenshot of a broken page is a courtesy, never the failure reported
                pass
    finally:
        try:
            page.evaluate("() => window.jupyterapp.serviceManager.sessions.shutdownAll()")
        except Exception:  # the page may be gone; the server's exit stops the kernel anyway
            pass
        page.close()
    for p in problems:
        print(f"   - {p}")
    return not problems


def shoot(page, height: int | None, path: Path) -> None:
    """The whole notebook: the window made as tall as the notebook's content (Lab scrolls inside a panel,
    so a plain full-page screenshot would show one screen), the file browser folded away."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    if height:
        tall = min(height + 40, SCREENSHOT_MAX_PX)
        if tall < height + 40:
            print(f"   screenshot cut at {SCREENSHOT_MAX_PX} px of {height + 40}")
        page.set_viewport_size({"width": 1280, "height": tall})
        page.wait_for_timeout(1500)
    page.screenshot(path=str(path), full_page=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scalinglab.harness.lab_check", description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/NN_*.ipynb")
    ap.add_argument("--screenshots", type=Path, default=Path("results/lab-check"), help="folder for NN_name.png")
    ap.add_argument("--timeout", type=int, default=900, help="seconds a notebook may run")
    ap.add_argument("--open-save-only", action="store_true", help="only check that open+save keeps the bytes")
    ap.add_argument("--saved-dir", type=Path, help="keep what Lab wrote on save here (to study a difference)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still restores the notebooks (finally below)
    from playwright.sync_api import sync_playwright  # only here: the rest of the library never needs it

    root = project_root()
    notebooks = [p.resolve() for p in args.notebooks] or sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    originals = {nb: nb.read_bytes() for nb in notebooks}
    args.screenshots = args.screenshots.resolve() if args.screenshots else None
    t0, ok = time.perf_counter(), []
    with tempfile.TemporaryDirectory(prefix="lab-check-") as tmp_name:
        tmp = Path(tmp_name)
        log = open(tmp / "server.log", "w")
        proc = None
        try:
            proc, base = start_lab(root, tmp, log)
            with sync_playwright() as pw:
                ctx = pw.chromium.launch_persistent_context(
                    str(tmp / "chromium"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                    viewport={"width": 1280, "height": 900})
                for nb in notebooks:
                    ok.append(check_notebook(ctx, base, root, nb, originals[nb], args, tmp / "results"))
                ctx.close()
        finally:
            for nb, data in originals.items():  # whatever happened, no tracked notebook stays modified
                if nb.read_bytes() != data:
                    nb.write_bytes(data)
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
            log.close()
            if args.screenshots:  # kept beside the screenshots: the temporary folder goes
                args.screenshots.mkdir(parents=True, exist_ok=True)
                (args.screenshots / "jupyterlab.log").write_bytes((tmp / "server.log").read_bytes())
    print(f"lab-check: {sum(ok)}/{len(notebooks)} notebooks passed in {time.perf_counter() - t0:.0f} s"
          + (f"; screenshots and JupyterLab's log in {args.screenshots}" if args.screenshots else ""))
    return 0 if all(ok) and len(ok) == len(notebooks) else 1


if __name__ == "__main__":
    sys.exit(main())
