package message

import (
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOffsetMsgID_KnownVectors(t *testing.T) {
	for _, tc := range []struct {
		host   string
		offset int64
		want   string
	}{
		// C0A80001 = 192.168.0.1, 00002A9F = 10911, then the offset.
		{"192.168.0.1:10911", 1024, "C0A8000100002A9F0000000000000400"},
		{"[::ffff:192.168.0.1]:10911", 1024, "C0A8000100002A9F0000000000000400"},
		{"255.255.255.255:65535", -1, "FFFFFFFF0000FFFFFFFFFFFFFFFFFFFF"},
		{"[2001:db8::1]:10911", 1, "20010DB800000000000000000000000100002A9F0000000000000001"},
	} {
		host := netip.MustParseAddrPort(tc.host)
		require.Equal(t, tc.want, OffsetMsgID(host, tc.offset))
		require.Equal(t, "x"+tc.want, string(AppendOffsetMsgID([]byte("x"), host, tc.offset)))

		gotHost, gotOffset, err := ParseOffsetMsgID(tc.want)
		require.NoError(t, err)
		require.Equal(t, host.Addr().Unmap(), gotHost.Addr())
		require.Equal(t, host.Port(), gotHost.Port())
		require.Equal(t, tc.offset, gotOffset)

		_, lowerOffset, err := ParseOffsetMsgID(strings.ToLower(tc.want))
		require.NoError(t, err)
		require.Equal(t, tc.offset, lowerOffset)
	}
	require.Equal(t, "0000000000000000000000000000002A", OffsetMsgID(netip.AddrPort{}, 42))
}

func TestParseOffsetMsgID_Errors(t *testing.T) {
	for _, id := range []string{
		"",
		"C0A8000100002A9F000000000000040",   // 31
		"C0A8000100002A9F00000000000004000", // 33
		"G0A8000100002A9F0000000000000400",  // not hex
		"C0A8000100012A9F0000000000000400",  // port 0x12A9F > 65535
	} {
		_, _, err := ParseOffsetMsgID(id)
		require.ErrorIs(t, err, ErrBadMsgID, id)
	}
}

func TestAppendOffsetMsgID_DoesNotAllocate(t *testing.T) {
	host := netip.MustParseAddrPort("[2001:db8::1]:10911")
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendOffsetMsgID(buf[:0], host, 12345)
	})
	require.Zero(t, allocs)
}

func TestUniqIDGenerator_KnownVector(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1234, 0x1B6D3586)
	now := time.Date(2025, 9, 19, 12, 0, 0, 123e6, time.UTC)
	// 0A000001 ip · 04D2 pid · 1B6D3586 class loader hash ·
	// 5F45A67B = 1598400123 ms since 2025-09-01 · counter.
	require.Equal(t, "0A00000104D21B6D35865F45A67B0000", g.Next(now))
	require.Equal(t, "0A00000104D21B6D35865F45A67B0001", g.Next(now))
	require.Equal(t, "x0A00000104D21B6D35865F45A67B0002", string(g.AppendNext([]byte("x"), now)))
}

func TestUniqIDGenerator_RoundTrip(t *testing.T) {
	loc := time.FixedZone("UTC+8", 8*3600)
	for _, tc := range []struct {
		ip     string
		idLen  int
		wantIP string
	}{
		{"10.0.0.1", 32, "10.0.0.1"},
		{"::ffff:10.0.0.1", 32, "10.0.0.1"},
		{"2001:db8::5", 56, "2001:db8::5"},
		{"", 32, "0.0.0.0"},
	} {
		var ip netip.Addr
		if tc.ip != "" {
			ip = netip.MustParseAddr(tc.ip)
		}
		g := NewUniqIDGenerator(ip, -2, -3)
		for _, born := range []time.Time{
			time.Date(2025, 9, 19, 12, 0, 0, 123e6, loc),
			time.Date(2025, 1, 1, 0, 0, 0, 0, loc),
			time.Date(2025, 8, 31, 23, 59, 59, 999e6, loc), // span over MaxInt32
		} {
			id := g.Next(born)
			require.Len(t, id, tc.idLen)
			u, err := ParseUniqID(id, born.Add(time.Millisecond))
			require.NoError(t, err)
			require.Equal(t, tc.wantIP, u.Addr.String())
			require.Equal(t, int16(-2), u.Pid)
			require.Equal(t, int32(-3), u.ClassLoaderHash)
			require.True(t, born.Equal(u.Time), "born %v, parsed %v", born, u.Time)
			require.Equal(t, loc, u.Time.Location())
		}
	}
}

// The generator keeps the month of its last id: ids across a month's end,
// back again, and at one instant in another zone must each count from
// their own month's start.
func TestUniqIDGenerator_MonthBoundaries(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, 1)
	lastMs := time.Date(2025, 9, 30, 23, 59, 59, 999e6, time.UTC)
	for _, now := range []time.Time{
		lastMs,
		lastMs.Add(time.Millisecond), // 1 October
		lastMs,
		lastMs.In(time.FixedZone("UTC+9", 9*3600)), // 1 October, 08:59 there
		time.Date(2025, 2, 28, 12, 0, 0, 0, time.UTC),
	} {
		id := g.Next(now)
		want := now.Sub(time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())).Milliseconds()
		span, err := strconv.ParseUint(id[20:28], 16, 32) // after IP, pid and class loader hash
		require.NoError(t, err)
		require.Equal(t, uint64(want), span, "id %s made at %v", id, now)
	}
}

func TestParseUniqID_MonthRules(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, 1)
	born := time.Date(2024, 12, 31, 23, 0, 0, 0, time.UTC)
	id := g.Next(born)

	// Read a day later, in the next month (and year): still December.
	u, err := ParseUniqID(id, born.Add(24*time.Hour))
	require.NoError(t, err)
	require.True(t, born.Equal(u.Time), "got %v", u.Time)

	// Read at the very instant it was made: RocketMQ treats start+span >= now
	// as future and steps back a month.
	u, err = ParseUniqID(id, born)
	require.NoError(t, err)
	// Nov 1 + the span of 30 days 23 hours.
	require.Equal(t, time.Date(2024, 12, 1, 23, 0, 0, 0, time.UTC), u.Time)
}

func TestParseUniqID_Errors(t *testing.T) {
	for _, id := range []string{"", "0A00000104D21B6D35865F45A67B000", "0A00000104D21B6D35865F45A67B000Z"} {
		_, err := ParseUniqID(id, time.Now())
		require.ErrorIs(t, err, ErrBadMsgID, id)
	}
}

func TestUniqIDGenerator_ConcurrentIDsAreDistinct(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, 1)
	now := time.Date(2025, 9, 19, 12, 0, 0, 0, time.UTC)
	const workers, each = 8, 1000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], g.Next(now))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			require.False(t, seen[id], "duplicate %s", id)
			seen[id] = true
		}
	}
	require.Len(t, seen, workers*each)
}

func TestUniqIDGenerator_CounterWrapsAt16Bits(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, 1)
	g.counter.Store(0xFFFF)
	now := time.Now()
	require.True(t, strings.HasSuffix(g.Next(now), "FFFF"))
	require.True(t, strings.HasSuffix(g.Next(now), "0000"))
}

func BenchmarkUniqIDGenerator_AppendNext(b *testing.B) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1, 1)
	buf := make([]byte, 0, msgIDLenV6)
	now := time.Now()
	b.SetBytes(msgIDLenV4)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.AppendNext(buf[:0], now)
	}
}
