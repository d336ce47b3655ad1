# k8sapi. `make local` runs the stack, `make test` runs every check.
# sam build calls the build-<LogicalId> targets (template.yaml: BuildMethod
# makefile, ContextPath .) with ARTIFACTS_DIR set.

SHELL := /bin/bash
GO    ?= go

# The Lambda build: static linux/arm64, reproducible (no paths, no build id),
# no RPC fallback in aws-lambda-go (provided.al2023 speaks the Runtime API),
# and no HTTP/2 in net/http (nethttpomithttp2: every peer of a function, the
# Runtime API, the AWS APIs, the platform's, speaks HTTP/1.1; it is 390 KB of
# each binary's 12 MiB budget). lambdaruntime.BuildTags is the same for the
# local stack.
LAMBDA_GOFLAGS := -tags lambda.norpc,nethttpomithttp2 -trimpath -ldflags='-s -w -buildid='
define lambda_build
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)" >&2; exit 2; }
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_GOFLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/$(1)
endef

# One line per function of template.yaml (.ci/check-lambda-builds fails if
# a template function has no target here).
build-CreateClusterFunction: ; $(call lambda_build,create-cluster)
build-ClustersFunction:      ; $(call lambda_build,clusters)
build-GetBundleFunction:     ; $(call lambda_build,get-bundle)
build-HealthFunction:        ; $(call lambda_build,health)
build-ReconcilerFunction:    ; $(call lambda_build,reconciler)
build-MigrateFunction:       ; $(call lambda_build,migrate)

LOCAL_BIN := .local/bin

## local: the whole stack on http://127.0.0.1:3000 (Ctrl-C stops it all);
## BOOT_VMS=1: its VMs boot as stand-ins that fetch and report (internal/vmstandin)
local:
	@scripts/dev-prerequisites.sh local
	@mkdir -p $(LOCAL_BIN)
	$(GO) build -o $(LOCAL_BIN)/k8sapi-local ./cmd/k8sapi-local
	exec $(LOCAL_BIN)/k8sapi-local $(if $(PORT),-port $(PORT)) $(if $(filter 1,$(BOOT_VMS)),-boot-vms)

## invoke: FUNCTION=HealthFunction EVENT=events/health.json [ENV_VARS=env.local.json]
invoke:
	@test -n "$(FUNCTION)" -a -n "$(EVENT)" || { echo "usage: make invoke FUNCTION=HealthFunction EVENT=events/health.json" >&2; exit 2; }
	@mkdir -p $(LOCAL_BIN)
	@$(GO) build -o $(LOCAL_BIN)/k8sapi-local ./cmd/k8sapi-local
	@$(LOCAL_BIN)/k8sapi-local invoke $(if $(ENV_VARS),-env-vars $(ENV_VARS)) $(FUNCTION) $(EVENT)

## migrate: apply k8sapi's migrations to DATABASE_URL (PLATFORM_DEV=1 adds the dev-only set)
migrate:
	$(GO) run ./cmd/k8sapi-migrate $(if $(PLATFORM_DEV),-platform-dev)

SHELL_SCRIPTS := .ci/run .ci/check-lambda-builds e2e/build-components.sh e2e/build-node-image.sh \
	e2e/node-image/cloud-init-standin e2e/node-image/sandbox-cgroups e2e/node-image/sandbox-kernel-tunables scripts/pin-artifacts.sh \
	scripts/dev-prerequisites.sh

# staticcheck at a pinned version: go run fetches and builds it once (the
# module proxy, checked against the checksum database) and caches the binary, so
# a fresh clone needs nothing installed and the tool stays out of go.mod.
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

## lint: gofmt, go vet, staticcheck (dead code too), cfn-lint (its informational checks too), shellcheck
lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "not gofmt-formatted (gofmt -w them):"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	cfn-lint --include-checks I -- template.yaml
	shellcheck $(SHELL_SCRIPTS)

## test: installs what the machine lacks (scripts/dev-prerequisites.sh), then
## lint, unit and integration tests (real Postgres and moto), the Lambda
## build check and the end-to-end proofs (root; e2e/README.md)
test:
	@scripts/dev-prerequisites.sh test
	$(MAKE) lint
	# -timeout: the bundle's script tests install whole nodes into temporary
	# roots; on a busy two-core machine the package has needed 16 minutes,
	# past go test's default of 10.
	$(GO) test -count=1 -timeout 30m ./...
	.ci/check-lambda-builds
	$(MAKE) e2e

## e2e: the end-to-end proofs: rendered bundles boot real etcd + Kubernetes, and VMs booted as machines become a working cluster (root; e2e/README.md)
# -v: the node proof's phase timings and summary line belong in the output.
e2e:
	cd e2e && $(GO) vet ./... && $(GO) test -count=1 -timeout 80m -v ./... 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; exit $${PIPESTATUS[0]}

## e2e-nodes: the node proof: every VM boots as a systemd machine (root, systemd-nspawn; e2e/README.md)
e2e-nodes:
	cd e2e && $(GO) vet ./... && $(GO) test -count=1 -timeout 60m -run '^TestNode' -v .

# NODE_PROOF_FOCUSED runs the node proof's bring-up and the steps its
# target's E2E_*_ONLY variables ask for (e2e/README.md).
NODE_PROOF_FOCUSED = @scripts/dev-prerequisites.sh test && cd e2e && $(GO) vet ./... && \
	$(GO) test -count=1 -timeout 70m -run '^TestNodesBecomeACluster$$' -v . 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; exit $${PIPESTATUS[0]}

## e2e-ca-rotation: the node proof's bring-up and pool step with every root of trust
## rotated while the workers run (E2E_CA_ROTATION=1; root; e2e/README.md)
e2e-ca-rotation: export E2E_POOL_ONLY := 1
e2e-ca-rotation: export E2E_CA_ROTATION := 1
e2e-ca-rotation:
	$(NODE_PROOF_FOCUSED)

## e2e-scaling: the node proof's bring-up and the control-plane scaling 3 → 5 → 3
## (E2E_SCALING_ONLY=1; root; e2e/README.md)
e2e-scaling: export E2E_SCALING_ONLY := 1
e2e-scaling:
	$(NODE_PROOF_FOCUSED)

## e2e-upgrade: the node proof's bring-up and pool step, whose rolling upgrade moves
## the control plane and the workers v1.35.4 → v1.36.3 (root; e2e/README.md)
e2e-upgrade: export E2E_POOL_ONLY := 1
e2e-upgrade: export E2E_UPGRADE := 1
e2e-upgrade:
	$(NODE_PROOF_FOCUSED)

## conformance: every [Conformance] test of the upstream suite on a cluster booted
## as the node proof's, a parallel then a serial pass; writes CONFORMANCE.md
## (root; e2e/README.md). CONFORMANCE_FOCUS=<regexp> narrows it, CONFORMANCE_SUBSET=1
## runs only the subset `make e2e` runs. CONFORMANCE_UPGRADE=1 founds at v1.35.4,
## runs the node proof's rolling upgrade to v1.36.3, then v1.36.3's suite (its
## section of CONFORMANCE.md).
conformance:
	@scripts/dev-prerequisites.sh test
	cd e2e && $(GO) vet -tags conformance ./... && CONFORMANCE_FOCUS='$(CONFORMANCE_FOCUS)' CONFORMANCE_SUBSET='$(CONFORMANCE_SUBSET)' \
		CONFORMANCE_UPGRADE='$(CONFORMANCE_UPGRADE)' \
		$(GO) test -tags conformance -count=1 -timeout 6h -run '^TestConformance$$' -v . 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; exit $${PIPESTATUS[0]}

## fuzz: each fuzz target for FUZZTIME (default 60s), one line of executions each
## (make test runs only the checked-in seeds under testdata/fuzz)
FUZZTIME ?= 60s
FUZZ_TARGETS := ./internal/api:FuzzParseID ./internal/api:FuzzCreateClusterBody ./internal/api:FuzzStatusReportBody \
	./internal/lambdaserve:FuzzHandler ./internal/envelope:FuzzOpen
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		out=$$($(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg 2>&1) || { echo "$$out"; exit 1; }; \
		echo "$$fn: $$(echo "$$out" | grep -o 'elapsed: .*execs: [0-9]* ([0-9]*/sec)' | tail -1)"; \
	done

## bench: Go benchmarks (ECDSA vs RSA, benchstat), load on the local stack
## (starts make local if it is not running), a boot storm of 1,000 VMs
## (-storm N), cold starts and sizes, kubeadm
## side by side; prints one table of budgets and writes BENCHMARKS.md
bench:
	$(GO) run ./cmd/k8sapi-bench

## bench-fleet: only the fleet part of make bench (a fresh database seeded with
## 10,000 clusters; the sweep, the schedule, the reads at that size), its
## section of BENCHMARKS.md replaced and the rest kept
bench-fleet:
	$(GO) run ./cmd/k8sapi-bench -fleet-only

## bench-cost: only the cost per cluster (a 3 + 3 cluster founded and left
## at rest on a local stack of its own, its calls counted and priced) into
## BENCHMARKS.md's kept section.
bench-cost:
	$(GO) run ./cmd/k8sapi-bench -cost-only

## bench-bringup: the node proof's bring-up (POST /clusters to workloads reachable)
## BRINGUP_RUNS times (default 3), then the median of each phase into
## BENCHMARKS.md (root, as make e2e; e2e/README.md)
BRINGUP_RUNS ?= 3
bench-bringup:
	@scripts/dev-prerequisites.sh test
	rm -rf e2e/.work/timelines
	cd e2e && $(GO) vet ./... && for i in $$(seq $(BRINGUP_RUNS)); do \
		E2E_BRINGUP_ONLY=1 E2E_TIMELINE_OUT=$(CURDIR)/e2e/.work/timelines/run-$$i.json \
			$(GO) test -count=1 -timeout 30m -run '^TestNodesBecomeACluster$$' -v . 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)' | tail -60; \
		test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done
	$(GO) run ./cmd/k8sapi-bench -bringup e2e/.work/timelines

## bench-lifecycle: the node proof's operations on its live cluster (the
## control-plane remediation, the scaling 3 → 5 → 3, the pool with a worker's
## remediation, the CA rotation of every root and the rolling upgrade
## v1.35.4 → v1.36.3), each timed against its issue's goal into
## BENCHMARKS.md (root, as make e2e; e2e/README.md)
bench-lifecycle:
	@scripts/dev-prerequisites.sh test
	rm -rf e2e/.work/lifecycle
	cd e2e && $(GO) vet ./... && E2E_ETCD_LIFECYCLE_ONLY=1 E2E_SCALING_ONLY=1 E2E_POOL_ONLY=1 E2E_CA_ROTATION=1 E2E_UPGRADE=1 \
		E2E_TIMELINE_OUT=$(CURDIR)/e2e/.work/lifecycle/run.json \
		$(GO) test -count=1 -timeout 80m -run '^TestNodesBecomeACluster$$' -v . 2>&1 | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; \
		test $${PIPESTATUS[0]} -eq 0
	$(GO) run ./cmd/k8sapi-bench -lifecycle e2e/.work/lifecycle

.PHONY: local invoke migrate lint test e2e e2e-nodes conformance fuzz bench bench-fleet bench-cost bench-bringup bench-lifecycle \
	build-CreateClusterFunction build-ClustersFunction build-GetBundleFunction build-HealthFunction \
	build-ReconcilerFunction build-MigrateFunction
