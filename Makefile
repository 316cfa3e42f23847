# rocketstore: a RocketMQ-compatible message store in Go.
GO ?= go
BENCHTIME ?= 1000000x

.PHONY: test bench build run fuzz

## test: vet and run every test with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race -timeout 15m ./...

## bench: the CommitLog append benchmarks against their ceiling, in one run
bench:
	$(GO) test -run '^$$' -bench 'BenchmarkAppend|BenchmarkCeiling' -benchmem -benchtime $(BENCHTIME) ./commitlog/

## build: compile every package and command into ./bin
build:
	$(GO) build ./...

## run: until the broker lands, runs the CommitLog append benchmark (a store demo)
run: bench

## fuzz: run each decoder's fuzz target for a short while
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./message/
