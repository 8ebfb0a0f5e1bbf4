# scalinglab: two commands matter.
#   make reproduce   run every notebook headlessly (papermill), writing results/ and docs/results.md
#   make test        unit tests, every notebook in the smoke profile, nbval checks
# Both set up .venv themselves on a fresh clone.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PROFILE ?= full
SWEEP_PROFILE ?= auto
RESULTS ?= results
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

# MPLBACKEND stays unset: ipykernel installs its inline backend only then (the workbook shows each figure
# itself, but a stray plot should show too). A relative data mirror is made absolute here, against the folder
# make was run in, before any kernel (cwd notebooks/), subprocess or test moves elsewhere.
export PYTHONDONTWRITEBYTECODE := 1
ifneq ($(strip $(SCALINGLAB_DATA_MIRROR)),)
export SCALINGLAB_DATA_MIRROR := $(abspath $(SCALINGLAB_DATA_MIRROR))
endif

.PHONY: reproduce test test-portable nbval-portable lab lab-check venv lock bench device-carry clean

# The virtualenv is rebuilt when the dependency pins change.
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -c requirements.lock -e '.[all]'
	touch $@

venv: $(STAMP)

# On a GPU, reproduce first trains the sweeps (SWEEP_PROFILE=auto picks gpu-quick;
# gpu takes hours); without one the notebooks read data/sweeps/.
reproduce: $(STAMP)
	$(PY) -m scalinglab.harness.reproduce --profile $(PROFILE) --results $(RESULTS) --sweep-profile $(SWEEP_PROFILE)
ifeq ($(PROFILE),full)
	# The pages that quote results are regenerated from this run, never typed: docs/results.md from the
	# notebooks' summary.json, and the outputs of the README's tour and docs/cli.md's examples.
	$(PY) -m scalinglab.harness.results_page $(RESULTS) docs/results.md
	$(PY) -m scalinglab.harness.tour README.md
	$(PY) -m scalinglab.harness.tour docs/cli.md
endif

# Each notebook runs once: nbval executes it in the smoke profile and compares its checked cells, then
# tests/test_notebooks.py checks what that run wrote (summary.json keys, figures) instead of running it again.
# nbval and the unit tests run side by side, and the unit tests are spread over two workers (pytest-xdist):
# three lanes share two cores, so the longer unit suite takes the core nbval frees when it ends. BLAS runs on
# one thread (lanes of multi-thread OpenBLAS thrash on two cores); nbval-portable covers other thread counts.
test: $(STAMP)
	$(VENV)/bin/ruff check lib tests bench
	@results=$$(mktemp -d); \
	( SCALINGLAB_PROFILE=smoke SCALINGLAB_RESULTS=$$results OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -q \
	    -p no:cacheprovider --nbval-lax --nbval-current-env $(NOTEBOOKS) > $$results/nbval.log 2>&1; \
	  echo $$? > $$results/nbval.rc ) & \
	OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -q -n 2 tests -m "not notebook"; unit=$$?; wait; \
	echo "== nbval (smoke profile)"; cat $$results/nbval.log; \
	test $$unit = 0 && test "$$(cat $$results/nbval.rc)" = 0 && \
	SCALINGLAB_NOTEBOOK_RESULTS=$$results $(PY) -m pytest -q tests/test_notebooks.py -m notebook

# The notebook checks must hold on any machine CI may land on: other BLAS kernels and thread counts.
# Runs the nbval step under OPENBLAS_CORETYPE unset, Haswell, SkylakeX and OPENBLAS_NUM_THREADS 1 and 2.
PORTABLE_SETTINGS := "OPENBLAS_CORETYPE=" "OPENBLAS_CORETYPE=Haswell" "OPENBLAS_CORETYPE=SkylakeX" \
	"OPENBLAS_NUM_THREADS=1" "OPENBLAS_NUM_THREADS=2"
nbval-portable: $(STAMP)
	@failed=""; for setting in $(PORTABLE_SETTINGS); do \
	  echo "== nbval with $$setting"; \
	  env -u OPENBLAS_CORETYPE -u OPENBLAS_NUM_THREADS $$setting SCALINGLAB_PROFILE=smoke SCALINGLAB_RESULTS=$$(mktemp -d) \
	    $(PY) -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env $(NOTEBOOKS) || failed="$$failed $$setting"; \
	done; test -z "$$failed" || { echo "nbval failed with:$$failed"; exit 1; }

# The unit tests under the same five BLAS settings: a check that compares floating-point sums (a saved fit's
# objective, a rounded printed number) must hold on every kernel CI may land on, not only this one's.
test-portable: $(STAMP)
	@failed=""; for setting in $(PORTABLE_SETTINGS); do \
	  echo "== unit tests with $$setting"; \
	  env -u OPENBLAS_CORETYPE -u OPENBLAS_NUM_THREADS $$setting $(PY) -m pytest -q -p no:cacheprovider tests \
	    -m "not notebook" || failed="$$failed $$setting"; \
	done; test -z "$$failed" || { echo "unit tests failed with:$$failed"; exit 1; }

# --allow-root: the machines this runs on are often containers where root is the only user.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) notebooks/

# Every notebook opened, saved and run (Run All, smoke profile) in JupyterLab in headless Chromium: fails on an
# open+save that changes the file, an error, stderr output or figures shown != PNGs saved; one screenshot per
# notebook in $(RESULTS)/lab-check/. Debian's chromium (no browser download here; apt-get as root) and the
# [labcheck] extra (playwright) are installed on first use only, so `make test` stays lean.
lab-check: $(STAMP)
	@test -x /usr/bin/chromium || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y chromium; }
	@$(PY) -c "import playwright" 2>/dev/null || \
	  $(PY) -m pip install -q --disable-pip-version-check -c requirements.lock -e '.[labcheck]'
	$(PY) -m scalinglab.harness.lab_check --screenshots $(RESULTS)/lab-check

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# What bench/device_check.sh needs on a lent GPU machine, where ../shared does not travel:
# the corpus shards that the gpu-quick profile reads (120 MB of text: shards 00-05, 40 MB),
# copied from the mirror into the git-ignored .carry/ that the device call names in `carry`.
DEVICE_SHARDS := val train_00 train_01 train_02 train_03 train_04 train_05
device-carry:
	@test -n "$$SCALINGLAB_DATA_MIRROR" || { echo "set SCALINGLAB_DATA_MIRROR (e.g. ../shared/data)"; exit 2; }
	mkdir -p .carry/data/corpus/gutenberg-top-authors
	for s in $(DEVICE_SHARDS); do cp "$$SCALINGLAB_DATA_MIRROR/corpus/gutenberg-top-authors/$$s.jsonl.xz" \
	  .carry/data/corpus/gutenberg-top-authors/; done
	du -sh .carry

# Regenerate the pinned transitive closure after editing pyproject.toml.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q -e '.[all,labcheck]'   # labcheck too, so its pins (playwright, greenlet) stay in the lock
	# Drop torch's local version (+cpu here) so a GPU machine resolves the CUDA build of the same release.
	.venv-lock/bin/pip freeze --exclude-editable | grep -v '^-e' | sed -E 's/^(torch==[^+]*)\+.*/\1/' > requirements.lock
	rm -rf .venv-lock

clean:
	rm -rf $(RESULTS) .pytest_cache
