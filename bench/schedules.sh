#!/usr/bin/env bash
# The learning-rate schedule family on CPU (issue 25's own runs): preset schedules, profile cpu-schedules, into
# data/sweeps/schedules.db. 3 sizes (64x2, 96x2, 128x2) x 4 schedules (constant, cosine, WSD with a 20% linear
# cooldown, a two-stage step), 20 tokens per parameter, 3 seeds for 96x2: 20 runs, ~2.5 core-hours by the
# profile's measured speed (`scalinglab sweep --preset schedules --profile cpu-schedules --db X --cost`).
# One process, one torch thread, eager fp32. Rerun to resume: finished runs are skipped, the others resume from
# their checkpoints (data/sweeps/schedules.db.runs/). Start it detached and niced, from the repository root:
#   SCALINGLAB_DATA_MIRROR=/work/shared/data PY=/work/main/.venv/bin/python \
#     nohup setsid nice -n 19 bench/schedules.sh > schedules-logs/nohup.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DB=${SCHEDULES_DB:-data/sweeps/schedules.db}
LOGS=${SCHEDULES_LOGS:-schedules-logs}
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"   # this checkout's library, whatever the venv points at
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
export SCALINGLAB_CACHE=${SCALINGLAB_CACHE:-/work/sl-cache}
mkdir -p "$LOGS" "$(dirname "$DB")"
echo "$(date -u +%FT%TZ) start schedules/cpu-schedules (commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- lib || echo +dirty), pid $$)" >> "$LOGS/driver.log"
"$PY" -m scalinglab sweep --preset schedules --profile cpu-schedules --db "$DB" >> "$LOGS/run.log" 2>&1
rc=$?
echo "$(date -u +%FT%TZ) end   schedules/cpu-schedules rc=$rc" >> "$LOGS/driver.log"
exit $rc
