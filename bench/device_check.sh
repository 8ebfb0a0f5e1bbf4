#!/usr/bin/env bash
# The one prepared GPU check for the training sweeps, sized for a
# 15-minute device lease: about 1-2 min to start the machine, then this script in one
# `run` call of at most 10 minutes. It needs nothing installed beyond the H200 image
# (torch, pandas, scipy, statsmodels, tokenizers, tqdm are there) and reads the corpus
# from .carry/, which `make device-carry` fills here first (../shared does not travel):
#
#   make device-carry                      # here, once: corpus shards into .carry/data
#   run(command="bash bench/device_check.sh", carry=[".carry"], timeout_s=590)
#
# What comes back under $OUT: bench_train.txt (tokens/s and MFU of a 124M GPT against
# the eager fp32 baseline in the same run), kaplan.db and hoffmann.db (the gpu-quick
# sweeps, resumable: a run cut off by the deadline is simply not in them), their
# reports as JSON, sweeps.log and env.txt (GPU, driver, versions, commit). Commit the databases
# under data/sweeps/gpu-quick/ with a PROVENANCE.md built from env.txt.
#
# On a machine without CUDA the same script checks its own plumbing at smoke scale:
#   DEVICE_CHECK_PROFILE=smoke OUT=$(mktemp -d) bash bench/device_check.sh
set -uo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-results/device_check}
PROFILE=${DEVICE_CHECK_PROFILE:-gpu-quick}
# Seconds for the two sweeps together, after the bench; what is unfinished resumes later. The whole
# script must end inside one `run` (590 s): bench <= 120, tokenizing ~60, sweeps 300 (+20 to stop),
# reports ~20.
SWEEP_SECONDS=${SWEEP_SECONDS:-300}
PY=${PYTHON:-python3}
# Databases and checkpoints live outside $OUT: only 8 files come back from it.
WORK=${DEVICE_CHECK_WORK:-/tmp/device_check}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
export SCALINGLAB_DATA_MIRROR=${SCALINGLAB_DATA_MIRROR:-$PWD/.carry/data}
export SCALINGLAB_CACHE=${SCALINGLAB_CACHE:-/tmp/scalinglab-cache}
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0)) s] $*"; }

{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c "import sys, torch, numpy, pandas; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print('numpy', numpy.__version__, 'pandas', pandas.__version__)"
  nproc | sed 's/^/cpus: /'
} | tee "$OUT/env.txt"

stamp "corpus: checking the carried shards' sha256"
"$PY" -m scalinglab data verify gutenberg-val gutenberg-train-00 gutenberg-train-01 gutenberg-train-02 \
  gutenberg-train-03 gutenberg-train-04 gutenberg-train-05 || { echo "run 'make device-carry' here first"; exit 2; }

if [ "$PROFILE" = smoke ]; then bench_args="--steps 2"; else bench_args=""; fi
stamp "bench: 124M GPT, ours vs eager fp32 (MFU target >= 35%)"
timeout 120 "$PY" bench/bench_train.py $bench_args 2>&1 | tee "$OUT/bench_train.txt"

# Tokenize once before the sweeps start, so the two sweeps don't both train the BPE. For gpu-quick:
# 8k BPE on 20 MB, then 32M training tokens from 120 MB; 110 s on this project's 2-core CPU machine.
stamp "tokenizer and token cache for profile $PROFILE"
"$PY" -c "from scalinglab.training import sweep; tok, tr, va = sweep.load_tokens(sweep.get_profile('$PROFILE')); print(tok.name, len(tr), 'train tokens', len(va), 'val tokens')"

stamp "sweeps: kaplan and hoffmann at once, $SWEEP_SECONDS s at most"
for preset in kaplan hoffmann; do
  timeout --signal=INT --kill-after=20 "$SWEEP_SECONDS" "$PY" -m scalinglab sweep --preset $preset \
    --profile "$PROFILE" --db "$WORK/$preset.db" > "$WORK/$preset.log" 2>&1 &
done
wait
for preset in kaplan hoffmann; do
  # tqdm redraws with carriage returns: keep the last state of each line.
  tr '\r' '\n' < "$WORK/$preset.log" | grep -v '^ *$' | tail -n 40 >> "$OUT/sweeps.log"
  cp "$WORK/$preset.db" "$OUT/"
  "$PY" -m scalinglab sweep-report --db "$OUT/$preset.db" --json > "$OUT/$preset.report.json" \
    && "$PY" -m scalinglab sweep-report --db "$OUT/$preset.db"
done
stamp "done"
