package auth

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustEntry(t testing.TB, res, actions, decision string, ips ...string) Entry {
	t.Helper()
	var acts []string
	if actions != "" {
		acts = []string{actions}
	}
	e, err := EntryInfo{Resource: res, Actions: acts, Decision: decision, SourceIps: ips}.Entry()
	require.NoError(t, err)
	return e
}

func TestACL_Decide(t *testing.T) {
	local := netip.MustParseAddr("127.0.0.1")
	other := netip.MustParseAddr("10.1.2.3")
	for _, tc := range []struct {
		name     string
		custom   []Entry
		dflt     []Entry
		res      Resource
		actions  Actions
		ip       netip.Addr
		decided  bool
		decision Decision
	}{
		{"no entry refuses", nil, nil, Topic("t"), Pub, local, false, 0},
		{"literal allows", []Entry{mustEntry(t, "Topic:t", "Pub", "Allow")}, nil, Topic("t"), Pub, local, true, Allow},
		{"other action", []Entry{mustEntry(t, "Topic:t", "Sub", "Allow")}, nil, Topic("t"), Pub, local, false, 0},
		{"one of the actions", []Entry{mustEntry(t, "Topic:t", "Get", "Allow")}, nil, Topic("t"), Sub | Get, local, true, Allow},
		{"All covers Pub", []Entry{mustEntry(t, "Topic:t", "All", "Allow")}, nil, Topic("t"), Pub, local, true, Allow},
		{"other type", []Entry{mustEntry(t, "Group:t", "All", "Allow")}, nil, Topic("t"), Pub, local, false, 0},
		{"literal beats prefix deny", []Entry{mustEntry(t, "Topic:or*", "Pub", "Deny"), mustEntry(t, "Topic:orders", "Pub", "Allow")}, nil, Topic("orders"), Pub, local, true, Allow},
		{"longer prefix first", []Entry{mustEntry(t, "Topic:o*", "Pub", "Allow"), mustEntry(t, "Topic:ord*", "Pub", "Deny")}, nil, Topic("orders"), Pub, local, true, Deny},
		{"prefix beats any name", []Entry{mustEntry(t, "Topic:*", "Pub", "Deny"), mustEntry(t, "Topic:o*", "Pub", "Allow")}, nil, Topic("orders"), Pub, local, true, Allow},
		{"any name beats star", []Entry{mustEntry(t, "*", "All", "Deny"), mustEntry(t, "Topic:*", "Pub", "Allow")}, nil, Topic("orders"), Pub, local, true, Allow},
		{"deny beats allow at equal rank", []Entry{mustEntry(t, "Topic:*", "Pub", "Allow"), mustEntry(t, "Topic:*", "All", "Deny")}, nil, Topic("x"), Pub, local, true, Deny},
		{"source IP narrows", []Entry{mustEntry(t, "Topic:t", "Pub", "Allow", "10.0.0.0/8")}, nil, Topic("t"), Pub, local, false, 0},
		{"source IP in range", []Entry{mustEntry(t, "Topic:t", "Pub", "Allow", "10.0.0.0/8")}, nil, Topic("t"), Pub, other, true, Allow},
		{"source IP deny for loopback", []Entry{mustEntry(t, "Topic:t", "Pub", "Allow"), mustEntry(t, "Topic:t*", "Pub", "Deny", "127.0.0.1")}, nil, Topic("t"), Pub, local, true, Allow},
		{"unknown peer matches no IP entry", []Entry{mustEntry(t, "Topic:t", "Pub", "Allow", "0.0.0.0/0")}, nil, Topic("t"), Pub, netip.Addr{}, false, 0},
		{"default only when custom has none", []Entry{mustEntry(t, "Topic:a", "Pub", "Allow")}, []Entry{mustEntry(t, "Topic:*", "Pub", "Deny")}, Topic("b"), Pub, local, true, Deny},
		{"custom before default", []Entry{mustEntry(t, "Topic:*", "Pub", "Allow")}, []Entry{mustEntry(t, "Topic:b", "Pub", "Deny")}, Topic("b"), Pub, local, true, Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acl := ACL{Custom: tc.custom, Default: tc.dflt}
			e, ok := acl.Decide(tc.res, tc.actions, tc.ip)
			require.Equal(t, tc.decided, ok)
			if ok {
				require.Equal(t, tc.decision, e.Decision)
			}
		})
	}
}

func TestGroup_RetryTopicIsItsGroup(t *testing.T) {
	require.Equal(t, Resource{Type: TypeGroup, Name: "g"}, Group("%RETRY%g"))
	require.Equal(t, Resource{Type: TypeGroup, Name: "g"}, TopicOrGroup("%RETRY%g"))
	require.Equal(t, Resource{Type: TypeTopic, Name: "%DLQ%g"}, TopicOrGroup("%DLQ%g"))
}

func TestParseResource(t *testing.T) {
	for in, want := range map[string]string{"*": "*", "topic:*": "Topic:*", "Group:g*": "Group:g*", "Cluster:c": "Cluster:c", " Namespace:n ": "Namespace:n"} {
		r, err := ParseResource(in)
		require.NoError(t, err, in)
		require.Equal(t, want, r.String())
	}
	for _, bad := range []string{"", "Topic", "Topic:", "Queue:x", "Topic:a*b", "*:x", "Topic:**"} {
		_, err := ParseResource(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}

// javaOrder is upstream's comparePolicyEntries, for the reference below,
// but for its last step: upstream returns 1 when the first entry is Deny,
// which sorts Deny after Allow against its own comment ("the decision deny
// has higher priority"); here Deny goes first. Entries are keyed by
// resource, so two matching entries of one policy never tie and the
// difference cannot show.
func javaOrder(a, b Entry) int {
	r1, r2 := a.Resource, b.Resource
	c := 0
	switch {
	case r1.Type != r2.Type:
		if r1.Type == TypeAny {
			c = 1
		}
		if r2.Type == TypeAny {
			c = -1
		}
	case r1.Pattern == r2.Pattern:
		if r1.Pattern == Prefixed {
			c = -(len(r1.Name) - len(r2.Name))
			if c > 0 {
				c = 1
			} else if c < 0 {
				c = -1
			}
		}
	default:
		switch {
		case r1.Pattern == Literal:
			c = -1
		case r2.Pattern == Literal:
			c = 1
		case r1.Pattern == Prefixed:
			c = -1
		case r2.Pattern == Prefixed:
			c = 1
		}
	}
	if c != 0 {
		return c
	}
	switch {
	case a.Decision == b.Decision:
		return 0
	case a.Decision == Deny:
		return -1
	}
	return 1
}

// referenceDecide filters and sorts as AclAuthorizationHandler does.
func referenceDecide(entries []Entry, res Resource, actions Actions, ip netip.Addr) (Entry, bool) {
	var m []Entry
	for _, e := range entries {
		if e.Resource.Matches(res) && e.Actions&(actions|All) != 0 && e.matchesIP(ip) {
			m = append(m, e)
		}
	}
	if len(m) == 0 {
		return Entry{}, false
	}
	slices.SortStableFunc(m, javaOrder)
	return m[0], true
}

// FuzzACL_Decide checks the evaluator against upstream's filter-and-sort
// on entries built from the fuzzer's bytes: the same decision, never a
// panic.
func FuzzACL_Decide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "orders", byte(1), byte(7))
	f.Add([]byte{200, 17, 33, 90, 1, 1, 255}, "o", byte(3), byte(1))
	names := []string{"o", "or", "orders", "x", ""}
	f.Fuzz(func(t *testing.T, spec []byte, name string, acts byte, ipb byte) {
		var entries []Entry
		for i := 0; i+2 < len(spec) && len(entries) < 12; i += 3 {
			e := Entry{Actions: Actions(spec[i+1]) & (Pub | Sub | Get | All)}
			switch spec[i] % 5 {
			case 0:
				e.Resource = Resource{Type: TypeAny, Pattern: AnyName}
			case 1:
				e.Resource = Resource{Type: TypeTopic, Pattern: AnyName}
			case 2:
				e.Resource = Resource{Type: TypeTopic, Pattern: Prefixed, Name: names[int(spec[i]/5)%len(names)]}
			case 3:
				e.Resource = Resource{Type: TypeTopic, Name: names[int(spec[i]/5)%len(names)]}
			default:
				e.Resource = Resource{Type: TypeGroup, Name: names[int(spec[i]/5)%len(names)]}
			}
			if spec[i+2]&1 != 0 {
				e.Decision = Deny
			}
			if spec[i+2]&2 != 0 {
				e.SourceIPs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
			entries = append(entries, e)
		}
		ip := netip.AddrFrom4([4]byte{127, 0, 0, 1})
		if ipb&1 != 0 {
			ip = netip.AddrFrom4([4]byte{10, 0, 0, ipb})
		}
		res := Topic(name)
		a := Actions(acts) & (Pub | Sub | Get)
		acl := ACL{Custom: entries}
		got, gok := acl.Decide(res, a, ip)
		want, wok := referenceDecide(entries, res, a, ip)
		if gok != wok || (gok && (got.Decision != want.Decision || got.Resource != want.Resource)) {
			t.Fatalf("Decide = %v %v, upstream order gives %v %v (entries %v)", got, gok, want, wok, entries)
		}
	})
}
