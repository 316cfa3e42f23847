package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

// Entry is one entry of a policy: a resource, the actions it concerns,
// the source IPs it is limited to (none: any) and its decision
// (RocketMQ's PolicyEntry).
type Entry struct {
	Resource  Resource
	Actions   Actions
	SourceIPs []netip.Prefix // a single address is a /32 or /128
	Decision  Decision
}

// ParseSourceIP parses an address ("10.0.0.1") or a CIDR range
// ("10.0.0.0/8") as an entry's source IP.
func ParseSourceIP(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%w: source IP %q: %v", ErrInvalid, s, err)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: source IP %q: want an address or a CIDR range", ErrInvalid, s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// matchesIP reports whether the entry applies to a request from ip: it
// has no source IPs, or ip is in one of them. A request whose address is
// unknown (invalid ip) matches only entries without source IPs.
func (e *Entry) matchesIP(ip netip.Addr) bool {
	if len(e.SourceIPs) == 0 {
		return true
	}
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap()
	for _, p := range e.SourceIPs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// rank orders matching entries: lower decides first. Upstream's
// comparator: a "*" resource after every typed one; literal, then
// prefixed (a longer prefix first), then any name; Deny before Allow.
func (e *Entry) rank() (kind int, prefixLen int, deny int) {
	r := e.Resource
	switch {
	case r.Type == TypeAny:
		kind = 3
	case r.Pattern == Literal:
		kind = 0
	case r.Pattern == Prefixed:
		kind, prefixLen = 1, -len(r.Name)
	default:
		kind = 2
	}
	if e.Decision != Deny {
		deny = 1
	}
	return kind, prefixLen, deny
}

// before reports whether e decides before f.
func (e *Entry) before(f *Entry) bool {
	ek, ep, ed := e.rank()
	fk, fp, fd := f.rank()
	if ek != fk {
		return ek < fk
	}
	if ep != fp {
		return ep < fp
	}
	return ed < fd
}

// PolicyType tells a user's Custom policy from its Default one.
type PolicyType uint8

// Policy types.
const (
	Custom PolicyType = iota
	Default
)

// String is "Custom" or "Default".
func (t PolicyType) String() string {
	if t == Default {
		return "Default"
	}
	return "Custom"
}

// ParsePolicyType parses "Custom" or "Default" (case-insensitively); ""
// is Custom, as upstream.
func ParsePolicyType(s string) (PolicyType, error) {
	switch {
	case s == "" || strings.EqualFold(s, "Custom"):
		return Custom, nil
	case strings.EqualFold(s, "Default"):
		return Default, nil
	}
	return 0, fmt.Errorf("%w: policy type %q: want Custom or Default", ErrInvalid, s)
}

// ACL is a user's policies (RocketMQ's Acl of a User subject).
type ACL struct {
	Custom, Default []Entry
}

// entries returns the entries of policy type t.
func (a *ACL) entries(t PolicyType) *[]Entry {
	if t == Default {
		return &a.Default
	}
	return &a.Custom
}

// Put sets the entry of its resource in policy t: an entry for the same
// resource is replaced (Policy.updateEntry), others are kept.
func (a *ACL) Put(t PolicyType, e Entry) {
	es := a.entries(t)
	for i := range *es {
		if (*es)[i].Resource == e.Resource {
			(*es)[i] = e
			return
		}
	}
	*es = append(*es, e)
}

// Remove drops the entry of resource r from policy t and reports whether
// there was one.
func (a *ACL) Remove(t PolicyType, r Resource) bool {
	es := a.entries(t)
	for i := range *es {
		if (*es)[i].Resource == r {
			*es = append((*es)[:i:i], (*es)[i+1:]...)
			return true
		}
	}
	return false
}

// Empty reports whether a has no entry.
func (a *ACL) Empty() bool { return len(a.Custom) == 0 && len(a.Default) == 0 }

// Decide returns the entry that decides a request for actions on res from
// ip, and false when none applies (a refusal). The Custom policy is
// consulted first, the Default one only when no Custom entry applies.
func (a *ACL) Decide(res Resource, actions Actions, ip netip.Addr) (Entry, bool) {
	if e := decide(a.Custom, res, actions, ip); e != nil {
		return *e, true
	}
	if e := decide(a.Default, res, actions, ip); e != nil {
		return *e, true
	}
	return Entry{}, false
}

// decide is the first of the entries that apply, by rank; nil when none
// does. An entry applies when it covers res, has one of actions (or All)
// and covers ip.
func decide(entries []Entry, res Resource, actions Actions, ip netip.Addr) *Entry {
	var best *Entry
	for i := range entries {
		e := &entries[i]
		if e.Actions&(actions|All) == 0 || !e.Resource.Matches(res) || !e.matchesIP(ip) {
			continue
		}
		if best == nil || e.before(best) {
			best = e
		}
	}
	return best
}
