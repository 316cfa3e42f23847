package commitlog

import "testing"

// FuzzRawTail_SplitsAgree follows the same bytes, one file of them, given
// whole and cut in the pieces cuts says: both must end at the same record
// with the same store time, whatever the bytes (records or not), and never
// panic. Whole, each head is read in place; in small pieces it is
// collected first.
func FuzzRawTail_SplitsAgree(f *testing.F) {
	log := validLog(f, 40)[:fuzzFileSize]
	f.Add(log, []byte{1, 7, 8, 9, 39, 40, 41, 75, 76, 77, 200})
	f.Add(log[:3000], []byte{255, 3})
	f.Add(append(log[:500:500], make([]byte, 600)...), []byte{13})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		fileEnd := int64(len(data))
		var whole rawTail
		whole.reset(0)
		wholeTime := whole.scan(0, data, fileEnd)

		var cut rawTail
		cut.reset(0)
		var cutTime int64
		for off, i := 0, 0; off < len(data); i++ {
			n := len(data) - off
			if len(cuts) > 0 {
				n = min(n, 1+int(cuts[i%len(cuts)]))
			}
			if ts := cut.scan(int64(off), data[off:off+n], fileEnd); ts != 0 {
				cutTime = ts
			}
			off += n
		}
		if whole.next != cut.next {
			t.Fatalf("whole: next record at %d, in pieces at %d", whole.next, cut.next)
		}
		if whole.next >= 0 && wholeTime != cutTime {
			t.Fatalf("whole: store time %d, in pieces %d", wholeTime, cutTime)
		}
	})
}
