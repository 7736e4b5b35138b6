# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: build run test test-short conformance

# bin/plainkube, built as every script and test builds it (the tags and
# flags, and why: hack/build.sh).
build:
	./hack/build.sh

# Runs a cluster in the foreground (with a node agent as root, installing
# containerd if missing); KUBECONFIG is printed when it is ready.
run:
	./hack/run.sh $(ARGS)

# Installs what the tests need (as root, with apt-get) and runs every test.
test:
	./hack/test.sh

# Unit and in-process tests only (no kubectl, no root).
test-short:
	go test -short ./...

# Upstream's conformance suite (k8s.io/kubernetes/test/e2e v1.37.2) against a
# fresh cluster with a real node, offline (root). FOCUS and SKIP are Ginkgo
# regular expressions: make conformance FOCUS='\[sig-apps\]'
conformance:
	./hack/conformance.sh "$(FOCUS)" "$(SKIP)"
