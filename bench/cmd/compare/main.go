// Command compare measures rocketstore against the machine's physical limits
// and against NATS JetStream, side by side in one run, and writes
// BENCHMARKS.md with a chart of the ratios.
//
// Every round runs every row once, in the same order, so that the rows of
// one round see the same machine; ratios are taken within a round and the
// report gives the median and the spread over the rounds.
//
//	go run ./cmd/compare -quick           # a few minutes at most
//	go run ./cmd/compare -out ../BENCHMARKS.md
//
// The broker rows run cmd/broker (built with go build, so run this from
// bench/ or pass -broker) and this program again as "compare serve-nats", a
// nats-server process, and as "compare serve-null", the null broker of the
// client ceiling rows, so that each server's CPU time can be read from /proc.
// Linux only.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// config is what one run measures and for how long.
type config struct {
	quick   bool
	rounds  int
	dur     time.Duration // each throughput row, per round
	backlog int           // messages drained by the consumer rows
	getFill int           // messages behind the 32-message batch reads
	// commitLogFileSize is rocketstore's CommitLog file size (store and
	// broker); 0 is the default, 1 GiB. Quick mode makes it smaller so
	// that warming new files and settling write back less.
	commitLogFileSize int
	settleMax         time.Duration // the longest wait for a quiet disk
	dir               string        // scratch space on the disk being measured
	broker            string        // cmd/broker binary; "" builds one
	skip              map[string]bool
	progress          func(format string, args ...any)
}

type suite struct {
	name string
	run  func(c *config, r *results) error
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve-null" {
		if err := serveNull(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "serve-null:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "serve-nats" {
		if err := serveNATS(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "serve-nats:", err)
			os.Exit(1)
		}
		return
	}
	var (
		quick   = flag.Bool("quick", false, "a short run: fewer rounds, shorter rows, a small backlog")
		rounds  = flag.Int("rounds", 0, "rounds (default 5, or 3 with -quick)")
		dur     = flag.Duration("d", 0, "time per throughput row per round (default 3s, or 400ms with -quick)")
		backlog = flag.Int("backlog", 0, "messages drained by the consumer rows (default 1,000,000, or 20,000 with -quick)")
		out     = flag.String("out", "BENCHMARKS.md", "the report")
		chart   = flag.String("chart", "benchmarks.svg", "the chart of the ratios (SVG), linked from the report")
		dir     = flag.String("dir", "", "scratch directory on the disk to measure (default: a new one under $TMPDIR)")
		broker  = flag.String("broker", "", "cmd/broker binary (default: go build it)")
		skip    = flag.String("skip", "", "comma-separated suites to skip: physical,store,nats-store,broker")
	)
	flag.Parse()
	c := &config{quick: *quick, rounds: 5, dur: 3 * time.Second, backlog: 1_000_000, getFill: 200_000, broker: *broker,
		settleMax: 10 * time.Second, skip: map[string]bool{}}
	if c.quick {
		c.rounds, c.dur, c.backlog, c.getFill = 3, 400*time.Millisecond, 20_000, 20_000
		c.commitLogFileSize, c.settleMax = 256<<20, 3*time.Second
	}
	if *rounds > 0 {
		c.rounds = *rounds
	}
	if *dur > 0 {
		c.dur = *dur
	}
	if *backlog > 0 {
		c.backlog = *backlog
	}
	for _, s := range splitComma(*skip) {
		switch s {
		case "physical", "store", "nats-store", "broker":
			c.skip[s] = true
		default:
			fmt.Fprintf(os.Stderr, "compare: -skip %q: no such suite; the suites are physical, store, nats-store and broker\n", s)
			os.Exit(2)
		}
	}
	began := time.Now()
	c.progress = func(format string, args ...any) {
		fmt.Printf("[%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	if err := run(c, *dir, *out, *chart); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(c *config, dir, out, chart string) error {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "rocketstore-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	c.dir = dir
	m := describeMachine(dir)
	c.progress("machine: %s, %d cores, kernel %s, disk %s", m.cpu, m.cores, m.kernel, m.disk)
	suites := []suite{
		{"physical", physicalSuite},
		{"store", storeSuite},
		{"nats-store", natsStoreSuite},
		{"broker", brokerSuite},
	}
	if !c.skip["broker"] && c.broker == "" {
		c.progress("building cmd/broker")
		if c.broker, err = buildBroker(dir); err != nil {
			return err
		}
	}
	res := newResults()
	res.onAdd = func(x *row, s sample) {
		c.progress("  %-28s %9s %s/s %8.1f MB/s", x.id, fmtRate(s.rate()), x.unit, s.mbps())
	}
	start := time.Now()
	for round := 1; round <= c.rounds; round++ {
		for _, s := range suites {
			if c.skip[s.name] {
				continue
			}
			c.progress("round %d/%d: %s", round, c.rounds, s.name)
			if err := s.run(c, res); err != nil {
				return fmt.Errorf("round %d, %s: %w", round, s.name, err)
			}
		}
	}
	ratios := computeRatios(res)
	if err := writeReport(out, chart, m, c, res, ratios, time.Since(start)); err != nil {
		return err
	}
	c.progress("wrote %s and %s", out, chart)
	printRows(res)
	// The headline ratios come last, so that the run ends with them.
	for _, headline := range []bool{false, true} {
		for _, r := range ratios {
			if r.headline == headline {
				fmt.Printf("ratio %s=%.3f\n", r.name, r.val.med)
			}
		}
	}
	return nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
