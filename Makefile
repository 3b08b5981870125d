# runpod-operator: `make help` lists the targets. `make demo` and `make test` set up a fresh Debian
# machine themselves (as root: hack/setup.sh installs what is missing, and only that), then run.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

KUBECTL ?= kubectl
# `make deploy IMG=registry/runpod-operator:tag` deploys that image instead of deploy/base's.
IMG ?=
# `make run ARGS="--namespace team-a --log-level debug"`.
ARGS ?=

CRD := crds/runpodruns.runpod-operator.dev.yaml

##@ Start here

.PHONY: demo
demo: ## A run end to end: local kube-apiserver + Runpod simulator + controller (examples/quickstart.yaml)
	@# Only what the demo uses: no SeaweedFS or kstatus helper (the tests' own).
	bash hack/setup.sh root packages node control-plane
	npm run demo

.PHONY: test
test: setup verify ## The whole suite (real kube-apiserver, kubectl, sshd, simulated pods), after lint and the CRD check
	npm test

##@ Development

.PHONY: test-unit
test-unit: node-modules ## The pure tests only (no server, no pod): *.unit.test.ts, in well under a minute
	npm run -s test:unit

.PHONY: setup
setup: ## Install what is missing: Debian packages, node_modules (npm ci), kube-apiserver + etcd (cached)
	bash hack/setup.sh

.PHONY: node-modules
node-modules:
	bash hack/setup.sh node

.PHONY: verify
verify: lint verify-manifests ## Lint, and fail when crds/ is stale against src/api

.PHONY: lint
lint: node-modules ## Type-check (strict), lint, and shellcheck the pod's scripts
	npm run check
	@command -v shellcheck >/dev/null || { echo "shellcheck is missing: run 'bash hack/setup.sh packages' (Debian package shellcheck)" >&2; exit 1; }
	shellcheck -s sh src/pod/*.sh

.PHONY: manifests
manifests: node-modules ## Regenerate crds/ from the zod schemas in src/api
	npm run -s generate

.PHONY: verify-manifests
verify-manifests: node-modules
	@before=$$(mktemp); cp $(CRD) "$$before"; npm run -s generate >/dev/null; \
	if ! cmp -s "$$before" $(CRD); then \
	  rm -f "$$before"; echo "crds/ was stale: regenerated it from src/api (make manifests); commit the result" >&2; exit 1; \
	fi; rm -f "$$before"

.PHONY: run
run: node-modules ## The controller against the current kubeconfig (flags in ARGS="...")
	npm start -- $(ARGS)

# `make install-plugin PREFIX=~/.local` puts it elsewhere; run it again after pulling (it rebuilds dist/).
PREFIX ?= /usr/local

.PHONY: build
build: node-modules ## Bundle what ships into dist/ (esbuild): the controller the image runs, the plugin bin/kubectl-runpod runs
	npm run -s build

.PHONY: install-plugin
install-plugin: build ## Put kubectl-runpod on PATH (PREFIX/bin, default /usr/local/bin), so that `kubectl runpod` works (logs, ssh, cost, cancel, keep)
	install -d $(PREFIX)/bin
	ln -sf $(CURDIR)/bin/kubectl-runpod $(PREFIX)/bin/kubectl-runpod
	@echo "kubectl runpod --help"

##@ Cluster (the current kubeconfig)

.PHONY: install
install: ## Install the CRD
	$(KUBECTL) apply -k crds

.PHONY: uninstall
uninstall: no-runs ## Remove the CRD (refused while RunpodRuns exist)
	$(KUBECTL) delete -k crds --ignore-not-found

.PHONY: deploy
deploy: ## The CRD and the controller, cluster-wide (kubectl apply -k deploy; IMG=... for another image)
ifeq ($(IMG),)
	$(KUBECTL) apply -k deploy
else
	@mkdir -p tmp; dir=$$(mktemp -d tmp/deploy-XXXXXX); trap 'rm -rf "$$dir"' EXIT; \
	img='$(IMG)'; name="$${img%%@*}"; last="$${name##*/}"; tag=""; \
	if [[ "$$last" == *:* ]]; then tag="$${name##*:}"; name="$${name%:*}"; fi; \
	if [[ "$$img" == *@* ]]; then pin="digest: \"$${img#*@}\""; else pin="newTag: \"$${tag:-latest}\""; fi; \
	printf 'resources: [../../deploy]\nimages: [{name: runpod-operator, newName: "%s", %s}]\n' "$$name" "$$pin" > "$$dir/kustomization.yaml"; \
	$(KUBECTL) apply -k "$$dir"
endif

.PHONY: undeploy
undeploy: no-runs ## Remove the controller and the CRD (kubectl delete -k deploy; refused while RunpodRuns exist)
	$(KUBECTL) delete -k deploy --ignore-not-found

# Deleting a run is what deletes its Runpod pods (the finalizer), and only a running controller does it:
# with the controller or the CRD gone first, the runs' deletion would hang and their pods live on until
# their watchdog's deadline.
.PHONY: no-runs
no-runs:
	@runs=$$($(KUBECTL) get runpodruns.runpod-operator.dev --all-namespaces --no-headers 2>/dev/null | wc -l); \
	if [ "$$runs" -gt 0 ]; then \
	  echo "$$runs RunpodRun(s) still exist: delete them first while the controller runs (kubectl delete rpr --all -A), so that it deletes their pods" >&2; exit 1; \
	fi

##@ Help

.PHONY: help
help: ## This list
	@awk 'BEGIN {FS = ":.*## "} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-z-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
