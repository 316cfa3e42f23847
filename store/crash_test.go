package store

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/powerloss"
	"github.com/rocketstore/rocketstore/message"
)

var long = flag.Bool("long", false, "run the crash tests with many more kill points")

const crashChildEnv = "ROCKETSTORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, os.Getenv("ROCKETSTORE_CRASH_ROUND"))
		os.Exit(0)
	}
	if dir := os.Getenv(timerChildEnv); dir != "" {
		timerChild(dir)
	}
	os.Exit(m.Run())
}

// crashOptions keep files small, so crashes land on file boundaries too,
// and allow 2 ConsumeQueue mappings for the 6 queues: their files go in
// and out of the mapping, units wait in the queues' tails and are read
// and written with pread and pwrite, when the process is killed.
func crashOptions() Options {
	return Options{
		CommitLogFileSize:          256 << 10,
		ConsumeQueueFileUnits:      100,
		MaxMappedConsumeQueueFiles: 2,
		IndexHashSlots:             64,
		IndexMaxEntries:            300,
		FlushDiskType:              SyncFlush,
		StoreHost:                  netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

// powerLossOptions are crashOptions with CommitLog files small enough that
// the first hundreds of flushes cross several of them.
func powerLossOptions() Options {
	o := crashOptions()
	o.CommitLogFileSize = 32 << 10
	return o
}

// crashMessage is message i of a round: its body, keys and queue follow
// from its name, so any record read back can be checked.
func crashMessage(round string, i int) *message.Message {
	name := fmt.Sprintf("%s-%d", round, i)
	body := bytes.Repeat([]byte(name+";"), 1+i%97)
	var props []byte
	props = message.AppendProperty(props, message.PropertyTags, "Tag"+strconv.Itoa(i%3))
	props = message.AppendProperty(props, message.PropertyKeys, "key-"+name)
	props = message.AppendProperty(props, message.PropertyUniqClientMessageIDKeyIndex, "U-"+name)
	return &message.Message{
		Topic:         "Crash" + strconv.Itoa(i%2),
		QueueID:       int32(i % 3),
		Body:          body,
		Properties:    string(props),
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      netip.MustParseAddrPort("127.0.0.1:50000"),
	}
}

// crashChild puts messages with sync flush from 4 goroutines until it is
// killed, printing "i queueOffset" for every acknowledged put.
func crashChild(dir, round string) {
	s, err := Open(dir, crashOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	var next int
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				res, err := s.PutMessage(crashMessage(round, i))
				if err != nil || res.Status != PutOK {
					fmt.Fprintln(os.Stderr, "child put:", err, res.Status)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%d %d\n", i, res.QueueOffset)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

type acked struct {
	round string
	i     int
	qoff  int64
}

// verifyAcked checks that every acknowledged message is readable, with its
// exact bytes, by queue offset and by key, and that every record served is
// one that was written whole.
func verifyAcked(t *testing.T, s *MessageStore, acks []acked) {
	t.Helper()
	for _, a := range acks {
		want := crashMessage(a.round, a.i)
		r := s.GetMessage("g", want.Topic, want.QueueID, a.qoff, 1, nil)
		require.Equal(t, Found, r.Status, "acked %s-%d at %s/%d:%d", a.round, a.i, want.Topic, want.QueueID, a.qoff)
		rec, err := message.Parse(r.Messages[0].Bytes())
		require.NoError(t, err)
		require.NoError(t, rec.CheckCRC())
		require.Equal(t, want.Body, rec.Body(), "acked %s-%d", a.round, a.i)
		require.Equal(t, want.Properties, string(rec.Properties()))
		r.Release()
		for _, key := range []string{fmt.Sprintf("key-%s-%d", a.round, a.i), fmt.Sprintf("U-%s-%d", a.round, a.i)} {
			q, err := s.QueryMessage(want.Topic, key, 4, 0, 1<<62)
			require.NoError(t, err)
			require.Len(t, q.Messages, 1, "query %s", key)
			rec, err := message.Parse(q.Messages[0].Bytes())
			require.NoError(t, err)
			require.Equal(t, want.Body, rec.Body())
			q.Release()
		}
	}
	// Everything served, acknowledged or not, is a whole record of ours, in
	// queue order, up to the queue's end and no further.
	for topic := range 2 {
		for qid := range int32(3) {
			name := "Crash" + strconv.Itoa(topic)
			max := s.GetMaxOffsetInQueue(name, qid)
			for off := s.GetMinOffsetInQueue(name, qid); off < max; {
				r := s.GetMessage("g", name, qid, off, 32, nil)
				require.Equal(t, Found, r.Status, "%s/%d:%d of %d", name, qid, off, max)
				for _, sl := range r.Messages {
					rec, err := message.Parse(sl.Bytes())
					require.NoError(t, err)
					require.NoError(t, rec.CheckCRC())
					require.Equal(t, off, rec.QueueOffset())
					keys, _ := message.LookupProperty(string(rec.Properties()), message.PropertyKeys)
					var round string
					var i int
					parts := strings.Split(strings.TrimPrefix(keys, "key-"), "-")
					require.Len(t, parts, 2, "record %d at %s/%d:%d of %d (offset %d): properties %q",
						rec.TotalSize(), name, qid, off, max, rec.PhysicalOffset(), rec.Properties())
					round, i = parts[0], atoi(t, parts[1])
					require.Equal(t, crashMessage(round, i).Body, rec.Body())
					off++
				}
				off = r.NextBeginOffset
				r.Release()
			}
			r := s.GetMessage("g", name, qid, max, 1, nil)
			require.Contains(t, []GetStatus{OffsetOverflowOne, NoMessageInQueue, NoMatchedLogicQueue}, r.Status)
			r.Release()
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestStore_Crash_SIGKILL runs a child process that puts messages with sync
// flush, kills it with SIGKILL at a random moment, reopens the store and
// checks every acknowledged message; again and again on the same store (a
// new one every 60 rounds). Every few rounds it also flips a bit in a copy
// of the crashed store (checkBitFlip).
func TestStore_Crash_SIGKILL(t *testing.T) {
	rounds, flipEvery, flips := 20, 2, 0
	if *long {
		rounds, flipEvery = 300, 5
	}
	var files int64
	done := 0
	defer func() {
		t.Logf("%d kill points, %d bit flips, up to %d CommitLog files in a store", done, flips, files)
	}()
	// A store's checks grow with it (every index file is searched by key):
	// a long run starts a new store every roundsPerStore rounds.
	const roundsPerStore = 60
	var dir string
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var all []acked
	prevStart := 0 // where the previous round's puts begin in all
	for round := range rounds {
		if round%roundsPerStore == 0 {
			dir, all, prevStart = t.TempDir(), nil, 0
		}
		lastOfStore := round == rounds-1 || round%roundsPerStore == roundsPerStore-1
		roundStart := len(all)
		name := "r" + strconv.Itoa(round)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "ROCKETSTORE_CRASH_ROUND="+name)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan []acked, 1)
		go func() {
			var got []acked
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 2 {
					continue // the kill tore the last line
				}
				i, err1 := strconv.Atoi(f[0])
				q, err2 := strconv.ParseInt(f[1], 10, 64)
				if err1 == nil && err2 == nil {
					got = append(got, acked{name, i, q})
				}
			}
			lines <- got
		}()
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		var got []acked
		select {
		case got = <-lines:
		case <-time.After(10 * time.Second):
			t.Fatal("the child's output did not end")
		}
		require.NotContains(t, stderr.String(), "child", "the child failed: %s", stderr.String())
		all = append(all, got...)
		if round%flipEvery == 0 && checkBitFlip(t, dir, crashOptions(), all, rng) {
			flips++
		}

		s, err := Open(dir, crashOptions())
		require.NoError(t, err, "round %d", round)
		verifyAcked(t, s, toVerify(all, prevStart, lastOfStore, rng))
		prevStart = roundStart
		// New puts continue at the right queue offsets.
		m := crashMessage("after"+name, 0)
		wantOff := s.GetMaxOffsetInQueue(m.Topic, m.QueueID)
		res, err := s.PutMessage(m)
		require.NoError(t, err)
		require.Equal(t, wantOff, res.QueueOffset)
		all = append(all, acked{"after" + name, 0, res.QueueOffset})
		files = max(files, s.CommitLog().MaxOffset()/int64(crashOptions().CommitLogFileSize)+1)
		require.NoError(t, s.Close())
		done++
		t.Logf("round %d: %d acknowledged puts so far", round, len(all))
	}
}

// toVerify is what a SIGKILL round checks of the acknowledged puts: all of
// them in the last round; otherwise those from recent on (this round's and
// the one before, which the crash could reach) and 300 older ones picked at
// random, so that a long run does not check everything every round.
func toVerify(all []acked, recent int, last bool, rng *rand.Rand) []acked {
	if last || recent <= 300 {
		return all
	}
	pick := all[recent:len(all):len(all)]
	for range 300 {
		pick = append(pick, all[rng.IntN(recent)])
	}
	return pick
}

// TestStore_Crash_PowerLoss loses the power at the k-th flush of any file,
// keeping only what was flushed plus random unflushed pages, and checks
// that every put acknowledged under sync flush survives byte for byte.
func TestStore_Crash_PowerLoss(t *testing.T) {
	points := 20
	if *long {
		points = 300
	}
	flips, rolls := 0, int64(0)
	defer func() {
		t.Logf("%d power-loss points, %d bit flips, %d CommitLog roll-overs", points, flips, rolls)
	}()
	for k := range points {
		// Spread over the first 600 flushes (of any file): the early ones,
		// and ones after CommitLog and ConsumeQueue files have rolled over.
		crashAt := 1 + k*599/points
		t.Run(fmt.Sprint("flush=", crashAt), func(t *testing.T) {
			dir := t.TempDir()
			disk := powerloss.New(crashAt, uint64(k))
			opts := powerLossOptions()
			opts.Mapper = disk
			opts.SyncFlushTimeout = 2 * time.Second
			s, err := Open(dir, opts)
			require.NoError(t, err)
			var mu sync.Mutex
			var acks []acked
			var next int
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for !disk.Dead() {
						mu.Lock()
						i := next
						next++
						mu.Unlock()
						if i > 3000 {
							return
						}
						res, err := s.PutMessage(crashMessage("p", i))
						if err != nil || res.Status != PutOK {
							return
						}
						mu.Lock()
						acks = append(acks, acked{"p", i, res.QueueOffset})
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			disk.Crash()
			_ = s.Close() // flushes fail: the power is out
			if k%2 == 0 && checkBitFlip(t, dir, powerLossOptions(), acks, rand.New(rand.NewPCG(uint64(k), 2))) {
				flips++
			}

			r, err := Open(dir, powerLossOptions()) // reboot: plain mmap on what reached the files
			require.NoError(t, err)
			defer r.Close()
			rolls += r.CommitLog().MaxOffset() / int64(powerLossOptions().CommitLogFileSize)
			verifyAcked(t, r, acks)
			t.Logf("%d puts acknowledged before the power went out at flush %d", len(acks), crashAt)
		})
	}
}
