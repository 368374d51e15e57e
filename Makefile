# Two commands for a fresh machine (see README.md):
#   make lab    set everything up, run the MNIST notebook with its defaults into runs/
#   make test   set everything up, run the whole test suite (notebooks included)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS := bert,groq,llm,inference,hub,serve,cluster,lab,test,book
STAMP := $(VENV)/.labkit-installed
# MNIST staged beside the checkout (the course machines and CI) is used unless one is chosen.
SHARED_MNIST := $(wildcard $(abspath ../shared/data/mnist))
ifeq ($(LABKIT_DATA_DIR),)
ifneq ($(SHARED_MNIST),)
export LABKIT_DATA_DIR := $(SHARED_MNIST)
endif
endif

.PHONY: lab test test-quick test-flaky test-interrupts test-kernels test-lowest setup golden bench clean setup-browser test-browser book \
	test-gpu test-vendors test-prerelease

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

lab: $(STAMP)
	@mkdir -p runs
	$(VENV)/bin/labkit run notebooks/graphcore/mnist.ipynb runs/graphcore-mnist.ipynb
	@echo "Executed notebook: runs/graphcore-mnist.ipynb"
	@$(VENV)/bin/labkit results runs/graphcore-mnist.ipynb --lines "Accuracy on test set"

# make test (and make test-prerelease) run pytest twice: the tests that do not depend on timing in JOBS
# processes side by side (pytest-xdist; a whole file to one process, so a golden notebook's cells share
# one kernel), then the timing tests, also in JOBS processes but apart from the rest: each shares the
# CPU with at most one other timing test, less than the busy loop per core that make test-flaky runs
# them against (on an idle 2-core machine: one process took 482 s, two 268 s). JOBS=0: one process for
# everything. Both passes run even when the first fails, so one run shows every failure, and either
# failing fails. pytest exits 5 when it collected no tests: a broken collection must never look green.
# $(1): the target, for the message; $(2): the pytest command, without -m and -n.
JOBS ?= 2
define two_passes
$(2) -m "not timing" -n $(JOBS) --dist loadfile; side_by_side=$$?; \
$(2) -m timing -n $(JOBS) --dist loadfile; timing=$$?; \
for status in $$side_by_side $$timing; do \
	if [ $$status -eq 5 ]; then echo "$(1): pytest collected no tests: 0 passed, 0 failed"; exit 1; fi; \
done; \
if [ $$side_by_side -ne 0 ]; then exit $$side_by_side; fi; exit $$timing
endef
space := $(subst ,, )
SUITE := $(PY) -m pytest tests --nbval --nbval-sanitize-with tests/golden/sanitize.cfg -p no:cacheprovider --durations=25

test: $(STAMP)
	$(VENV)/bin/vermin --target=3.8- --no-tips --violations --eval-annotations labkit
	$(call two_passes,make test,$(SUITE))
	$(PY) tests/golden/cpu_kernels.py --after-suite

# The loop between two changes (under 3 minutes): the tests not marked slow or timing
# (tests/conftest.py marks the files that start kernels, servers, jobs or train).
test-quick: $(STAMP)
	$(PY) -m pytest tests -m "not slow and not timing" -q -p no:cacheprovider

# The tests that need a CUDA GPU (tests/gpu, marked `gpu`): every training notebook on CUDA at small
# sizes through a real kernel. Skipped, with the reason, where torch sees no GPU (so `make test` and
# CI collect them as skipped). On a lent GPU machine without the venv: tests/gpu/device_check.sh.
test-gpu: $(STAMP)
	$(PY) -m pytest tests/gpu -m gpu -p no:cacheprovider -rs --durations=10

# The tests marked `timing` (interrupts, queues, timeouts, kills), 20 runs while a busy loop per
# core competes for the CPU (the loops stop by themselves); each test's passes out of 20.
test-flaky: $(STAMP)
	$(PY) tests/timing_repeat.py --runs $(or $(RUNS),20)

# The interrupt walks: Ctrl-C at every phase boundary of the nine notebooks through `labkit run`, and
# Kernel -> Interrupt through jupyter_client for MNIST and inference (tests/interrupts; long).
test-interrupts: $(STAMP)
	LABKIT_INTERRUPT_WALK=1 $(PY) -m pytest tests/interrupts -p no:cacheprovider -v

# Every golden notebook again under PyTorch's baseline and best CPU kernels, 1 and 2 threads,
# empty and warm labkit cache (tests/golden/cpu_kernels.py says which passes and why).
test-kernels: $(STAMP)
	$(PY) tests/golden/cpu_kernels.py

# The lowest versions pyproject.toml declares for the libraries labkit calls most, in a venv of
# their own made anew: torch, papermill, nbclient, openai and transformers at their floors, then
# tokenizers at its floor too (transformers has one floor in every extra). tests/lowest_versions.py writes the pins.
# The first tests run in JOBS processes, a whole file to each, as make test runs its own.
LOWEST_VENV ?= .venv-lowest
LOWEST_PY := $(LOWEST_VENV)/bin/python
LOWEST_TESTS := tests/serving tests/execute tests/sambanova/test_inference_client.py tests/llm tests/bert
# where seed 100 samples end-of-text depends on torch's random numbers, which change between releases
LOWEST_DESELECT := --deselect tests/serving/test_server.py::test_ignore_eos_runs_a_sampled_completion_to_max_tokens
# torch 2.0's wheels are built against NumPy 1.x and fail to import beside NumPy 2
LOWEST_NUMPY := numpy<2
LOWEST_SHOWN := torch|transformers|tokenizers|papermill|nbformat|nbclient|openai|httpx|numpy

test-lowest:
	rm -rf $(LOWEST_VENV)
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(PYTHON) tests/lowest_versions.py --extra serve --extra inference \
		torch transformers papermill nbformat nbclient openai httpx > $(LOWEST_VENV)/serve.txt
	echo '$(LOWEST_NUMPY)' >> $(LOWEST_VENV)/serve.txt
	$(PYTHON) tests/lowest_versions.py --extra llm --extra bert torch transformers tokenizers > $(LOWEST_VENV)/llm.txt
	echo '$(LOWEST_NUMPY)' >> $(LOWEST_VENV)/llm.txt
	$(LOWEST_PY) -m pip install --quiet --upgrade pip
	$(LOWEST_PY) -m pip install --quiet -c $(LOWEST_VENV)/serve.txt -e '.[serve,inference,llm,bert,test]'
	$(LOWEST_PY) -m pip list 2>/dev/null | grep -iE '^($(LOWEST_SHOWN)) '
	$(LOWEST_PY) -m pytest $(LOWEST_TESTS) $(LOWEST_DESELECT) -p no:cacheprovider -q -n $(JOBS) --dist loadfile
	$(LOWEST_PY) -m pip install --quiet -c $(LOWEST_VENV)/llm.txt transformers tokenizers
	$(LOWEST_PY) -m pip list 2>/dev/null | grep -iE '^(transformers|tokenizers) '
	$(LOWEST_PY) -m pytest tests/llm tests/bert -p no:cacheprovider -q

# The Jupyter stack's newest releases, pre-releases included, under the tests of what labkit overrides
# in them (labkit/execute/upstream.py) and of every interrupt path: a release that breaks `labkit run`
# or its Ctrl-C fails here before a class installs it. They go into a folder of their own, put ahead
# of the venv's site-packages (PYTHONPATH reaches the kernels too); the venv itself stays as it is.
# When the folder holds exactly the venv's releases (no newer release or pre-release of anything in
# it, tests/newer_than_venv.py), the tests would run on the files `make test` runs them on: it says
# so and stops there (PRERELEASE_ALWAYS=1 runs them anyway).
PRERELEASE := .prerelease
PRERELEASE_PACKAGES := nbclient jupyter_client jupyter_core ipykernel papermill nbformat
PRERELEASE_TESTS := tests/execute tests/test_interrupts.py tests/test_cell_end_interrupts.py tests/test_phases.py \
	tests/test_editing_cells.py

test-prerelease: $(STAMP)
	rm -rf $(PRERELEASE)
	$(PY) -m pip install --quiet --pre --upgrade --target $(PRERELEASE) $(PRERELEASE_PACKAGES)
	PYTHONPATH=$(abspath $(PRERELEASE)) $(PY) -m pip list --path $(PRERELEASE) 2>/dev/null \
		| grep -iE '^($(subst $(space),|,$(PRERELEASE_PACKAGES))) '
	@$(PY) tests/newer_than_venv.py $(PRERELEASE); status=$$?; \
	if [ $$status -eq 3 ] && [ -z "$(PRERELEASE_ALWAYS)" ]; then \
		echo "make test-prerelease: the newest releases, pre-releases included, are the venv's own, on which make test runs these tests: nothing new to test (PRERELEASE_ALWAYS=1 runs them anyway)"; \
		exit 0; \
	elif [ $$status -ne 0 ] && [ $$status -ne 3 ]; then exit $$status; fi; \
	$(call two_passes,make test-prerelease,PYTHONPATH=$(abspath $(PRERELEASE)) $(PY) -m pytest $(PRERELEASE_TESTS) -p no:cacheprovider -q --durations=10)

# labkit's vendor paths against the vendors' real packages where they install from PyPI, for what
# runs without the hardware (tests/groq/test_groqflow_real.py: GroqFlow's chip count with and without
# lspci, groqit up to its SDK check). GroqFlow 4.3.1 needs Python < 3.11 and torch 2.1.0 (a CUDA
# build with its nvidia-* wheels): about 2.9 GB to download and 5.4 GB installed, so it has a venv
# of its own beside the checkout and is not part of `make test`. GroqFlow leaves NumPy unpinned and
# pip picks NumPy 2, beside which torch 2.1's and scikit-learn 1.1.1's wheels fail to import.
GROQFLOW_PYTHON ?= $(or $(shell command -v python3.10),$(firstword $(wildcard $(HOME)/.pyenv/versions/3.10.*/bin/python3)))
GROQFLOW_VENV ?= $(abspath ../venvs/groqflow310)

test-vendors:
	@test -n "$(GROQFLOW_PYTHON)" || { echo "make test-vendors: no Python 3.10 found (GroqFlow 4.3.1 needs Python < 3.11); set GROQFLOW_PYTHON"; exit 1; }
	@test -x $(GROQFLOW_VENV)/bin/python || $(GROQFLOW_PYTHON) -m venv $(GROQFLOW_VENV)
	$(GROQFLOW_VENV)/bin/python -m pip install --quiet groqflow==4.3.1 'numpy<2' pytest
	$(GROQFLOW_VENV)/bin/python -m pytest tests/groq/test_groqflow_real.py -p no:cacheprovider -rs

golden: $(STAMP)
	$(PY) tests/golden/regenerate.py

# The tutorial's loop reads MNIST through torchvision, which labkit itself does not need (extra bench).
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/mnist_train.py

# The lab book in a real browser (tests/browser): Debian's chromium (apt-get, as root like the
# course CI) and Playwright's Python API; Playwright's own browser download is not used.
setup-browser: $(STAMP)
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; } \
		|| { echo "make setup-browser: could not install chromium (apt-get needs root)"; exit 1; }
	$(PY) -m pip install --quiet -e '.[browser]'

# One process: two JupyterLabs and chromiums side by side on 2 cores only slow each other. A Run All
# picked while the page has no kernel yet queues nothing, under any load: tests/browser/lab.py
# waits for the kernel before it runs anything.
test-browser: $(STAMP)
	LABKIT_BROWSER_TESTS=1 $(PY) -m pytest tests/browser -p no:cacheprovider --durations=10

# The static site of the golden notebooks and docs/ (Sphinx + myst-nb) into build/book/.
book: $(STAMP)
	$(PY) docs/book/build.py build/book
	@echo "The lab book: build/book/index.html"

clean:
	rm -rf runs .pytest_cache
