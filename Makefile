# rocketstore: a RocketMQ-compatible message store in Go.
GO ?= go
BENCHTIME ?= 1000000x

.PHONY: test bench build run fuzz bench-compare bench-compare-quick

## test: vet and run every test with the race detector
test:
	$(GO) vet ./...
	# bench/ is a module of its own: it must build too
	cd bench && $(GO) vet ./... && $(GO) test -race -timeout 5m ./...
	$(GO) test -race -timeout 15m ./...
	# the official client's pull and orderly consumers, and its push consumer's offset reset, race
	# with themselves (the console's browser test resets a running consumer too), and the
	# console's timings at scale mean nothing under the race detector: these run without -race
	$(GO) test -timeout 5m -run 'TestE2E_PullConsumer|TestE2E_OrderlyConsumer|TestE2E_SQL92PullConsumer|TestE2E_SQL92LitePullConsumer|TestMQAdmin_ResetOffsetByTimeRewindsARunningConsumer|TestConsole_ListPagesAtScale|TestConsole_InABrowser' ./e2e/

## bench: the CommitLog append benchmarks against their ceiling, then the
## store's, in one run (-p 1: one package at a time)
bench:
	$(GO) test -p 1 -run '^$$' -bench 'BenchmarkAppend|BenchmarkCeiling|BenchmarkPutMessage$$|BenchmarkGetMessage' -benchmem -benchtime $(BENCHTIME) ./commitlog/ ./store/

## build: compile every package, and the commands (broker, namesrv, mqadmin) into ./bin
build:
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/...

## run: the broker on its embedded defaults (name server :9876, broker :10911),
## started in ./run so that its store is ./run/store; metrics, /healthz and
## pprof on http://127.0.0.1:5557, the web console on http://127.0.0.1:5557/console/
run: build
	mkdir -p run && cd run && ../bin/broker -metricsExporterType PROM

## fuzz: run each decoder's fuzz target for a short while
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./message/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./server/remoting/
	$(GO) test -run '^$$' -fuzz FuzzCompile -fuzztime 30s ./server/filter/
	$(GO) test -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 30s ./ha/

## bench-compare: rocketstore against the physical limits and NATS JetStream,
## interleaved rounds in one run; writes BENCHMARKS.md and bench/benchmarks.svg
## (bench/ is a module of its own: nats-server is not a dependency of the store)
bench-compare:
	cd bench && $(GO) run ./cmd/compare -out ../BENCHMARKS.md -chart benchmarks.svg

## bench-compare-quick: the same rows, short (a few minutes); writes its
## report to a scratch folder, QUICK_OUT (tracked files are left alone;
## pass QUICK_OUT=. to write BENCHMARKS.md at the top)
QUICK_OUT ?= $(or $(TMPDIR),/tmp)/rocketstore-bench-quick
bench-compare-quick:
	mkdir -p $(QUICK_OUT)
	cd bench && $(GO) run ./cmd/compare -quick -out $(abspath $(QUICK_OUT))/BENCHMARKS.md -chart $(abspath $(QUICK_OUT))/benchmarks.svg
	@echo "report: $(QUICK_OUT)/BENCHMARKS.md"
