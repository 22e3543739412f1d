# Two commands set up a fresh machine and run: `make demo` (a sample) and `make test` (the tests).
# Each installs what it needs into .venv and no more: demo cgraph with the data extra (the
# samples read CSV files); test the tools and extras the tests use; dev all of that and the
# linters and the documentation site's builder.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := $(VENV)/.installed-demo
TESTS  := $(VENV)/.installed-test
DEV    := $(VENV)/.installed-dev

.PHONY: demo test dev bench golden tables man docs lint clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[data]'
	touch $(DEMO)

$(TESTS): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test,data,dask,plot,video,onnx,lsp]'
	touch $(TESTS) $(DEMO)

$(DEV): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[test,dev,docs,data,dask,plot,video,onnx,lsp]'
	touch $(DEV) $(TESTS) $(DEMO)

dev: $(DEV)

demo: $(DEMO)
	$(BIN)/cgraph eval samples/seed.cg --all
	$(BIN)/cgraph grad samples/seed.cg
	$(BIN)/cgraph grad samples/neuron.cg --precision 4
	$(BIN)/cgraph grad samples/softmax_cross_entropy.cg
	$(BIN)/cgraph optimize samples/rewrites.cg --report
	$(BIN)/cgraph diff samples/seed.cg
	$(BIN)/cgraph grad samples/logistic.cg --rows samples/data/train.csv --reduce mean
	$(BIN)/cgraph grad samples/huber.cg e=3
	$(BIN)/cgraph grad samples/rnn.cg --per-step
	$(BIN)/cgraph train samples/xor.cg --rows samples/data/xor.csv --wrt W1,b1,W2,b2 --optimizer adam --lr 0.05 --epochs 300

test: $(TESTS)
	$(BIN)/python -m pytest

bench: $(TESTS)
	$(BIN)/python bench/bench_core.py
	$(BIN)/python bench/bench_render.py
	$(BIN)/python bench/bench_tensors.py
	$(BIN)/python bench/bench_startup.py
	$(BIN)/python bench/bench_frontend.py
	$(BIN)/python bench/bench_lsp.py
	$(BIN)/python bench/bench_hessian.py
	$(BIN)/python bench/bench_compile.py
	$(BIN)/python bench/bench_batch.py
	$(BIN)/python bench/bench_rnn.py
	$(BIN)/python bench/bench_train.py
	$(BIN)/python bench/bench_scale.py
	$(BIN)/python bench/bench_onnx.py

golden: $(TESTS)
	$(BIN)/python -m pytest tests/test_golden.py tests/test_render.py tests/test_derivative_views.py tests/test_slides.py --update-golden
	git diff --stat tests/cases tests/golden_dot tests/golden_slides

# After editing grammars/cgraph.lark: rebuild the parser's tables (cgraph_cli/parse/tables.py).
tables: $(TESTS)
	$(BIN)/python cgraph_cli/parse/build.py

# After changing a command, an option or a help text: rewrite the man pages (docs/man/*.1).
man: $(DEMO)
	$(BIN)/python -m cgraph_cli.cli.manpages docs/man

# The documentation site (mkdocs.yml, docs/) into site/: first the generated tables of
# docs/json.md from the JSON Schemas (the API's page is read from the docstrings by
# mkdocstrings as the site is built), then
# `mkdocs build --strict`, where a broken link or anchor, or a page missing from the nav, fails.
# Installs the `docs` extra (MkDocs, Material, mkdocstrings) into .venv. CI runs this.
docs: $(DEV)
	$(BIN)/python docs/gen_json.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# ruff's rules and its formatting, mypy's type check of the package, and import-linter's
# contracts (each layer imports only those below it); all configured in pyproject.toml. CI
# runs this.
lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) build dist site *.egg-info
