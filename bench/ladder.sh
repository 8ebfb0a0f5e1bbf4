#!/usr/bin/env bash
# Porian et al.'s ladder on CPU: presets ladder0, ladder2, ladder3, ladder4 of profile cpu-ladder,
# 3 seeds each, one database per step in data/sweeps/ladder/<preset>.db. Two lanes, one run (one torch thread)
# each: seed 0 of every step first, then seeds 1 and 2. Rerun to resume: sweeps skip finished runs and resume
# the others from their checkpoints. Run it niced, e.g.
#   SCALINGLAB_DATA_MIRROR=... nohup nice -n 19 bench/ladder.sh > ladder-logs/nohup.log 2>&1 &
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${LADDER_DIR:-data/sweeps/ladder}
LOGS=${LADDER_LOGS:-ladder-logs}
PROFILE=${LADDER_PROFILE:-cpu-ladder}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
export SCALINGLAB_CACHE=${SCALINGLAB_CACHE:-/work/sl-cache}
mkdir -p "$OUT" "$LOGS"

lane() {
  for seeds in 1 3; do
    for preset in "$@"; do
      echo "$(date -u +%FT%TZ) start $preset --seeds $seeds (commit $(git rev-parse --short HEAD))" >> "$LOGS/driver.log"
      "$PY" -m scalinglab sweep --preset "$preset" --profile "$PROFILE" --seeds "$seeds" \
        --db "$OUT/$preset.db" --json >> "$LOGS/$preset.log" 2>&1
      echo "$(date -u +%FT%TZ) end   $preset --seeds $seeds rc=$?" >> "$LOGS/driver.log"
    done
  done
}

lane ladder0 ladder3 &   # ~2,200 s per seed (estimated)
lane ladder2 ladder4 &   # ~2,300 s per seed
wait
