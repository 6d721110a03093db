# ringstore — developer targets. CI runs .ci/run.
GO ?= go
# A count, not a duration: time-based runs (-fuzztime 15s) sometimes ended in
# FAIL or "context deadline exceeded" with no failing input on Go 1.26 here,
# in several packages; count-based runs were clean.
FUZZTIME ?= 50000x

.PHONY: test race lint fuzz bench probe

test:
	$(GO) test ./...

race:
	$(GO) test -race ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	$(GO) build -tags ringstore_nouring ./...
	cd bench/peers && $(GO) vet ./...
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed: skipped"; fi

# Every fuzz target, FUZZTIME executions each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# Writes bench-out/bench-read.json and bench-out/bench-wal.json.
bench:
	mkdir -p bench-out
	$(GO) run ./cmd/ringstore bench --dir "$$(mktemp -d -p /var/tmp)" --json bench-out/bench.json

probe:
	$(GO) run ./cmd/ringstore probe
