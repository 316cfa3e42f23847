package auth

import (
	"errors"
	"fmt"
	"net/netip"
)

// UserInfo is the body of AUTH_CREATE_USER, AUTH_UPDATE_USER and the
// answers of AUTH_GET_USER / AUTH_LIST_USER (RocketMQ's UserInfo). In
// answers Password is always empty: passwords are never returned.
type UserInfo struct {
	Username   string `json:"username,omitempty"`
	Password   string `json:"password,omitempty"`
	UserType   string `json:"userType,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
}

// AclInfo is the body of AUTH_CREATE_ACL, AUTH_UPDATE_ACL and the answers
// of AUTH_GET_ACL / AUTH_LIST_ACL (RocketMQ's AclInfo).
type AclInfo struct {
	Subject  string       `json:"subject"`
	Policies []PolicyInfo `json:"policies"`
}

// PolicyInfo is one policy of an AclInfo.
type PolicyInfo struct {
	PolicyType string      `json:"policyType,omitempty"`
	Entries    []EntryInfo `json:"entries"`
}

// EntryInfo is one entry of a PolicyInfo.
type EntryInfo struct {
	Resource  string   `json:"resource"`
	Actions   []string `json:"actions"`
	SourceIps []string `json:"sourceIps,omitempty"`
	Decision  string   `json:"decision"`
}

// Info is u as a UserInfo, without its password.
func (u *User) Info() UserInfo {
	return UserInfo{Username: u.Name, UserType: u.Type.String(), UserStatus: u.Status()}
}

// Info is the ACL of user as an AclInfo (the Custom policy first, a policy
// without entries left out).
func (a *ACL) Info(user string) AclInfo {
	info := AclInfo{Subject: SubjectPrefix + user, Policies: []PolicyInfo{}}
	for _, t := range []PolicyType{Custom, Default} {
		es := *a.entries(t)
		if len(es) == 0 {
			continue
		}
		p := PolicyInfo{PolicyType: t.String(), Entries: make([]EntryInfo, 0, len(es))}
		for _, e := range es {
			p.Entries = append(p.Entries, e.Info())
		}
		info.Policies = append(info.Policies, p)
	}
	return info
}

// Info is e as an EntryInfo.
func (e *Entry) Info() EntryInfo {
	ei := EntryInfo{Resource: e.Resource.String(), Actions: e.Actions.Names(), Decision: e.Decision.String()}
	for _, p := range e.SourceIPs {
		if p.IsSingleIP() {
			ei.SourceIps = append(ei.SourceIps, p.Addr().String())
		} else {
			ei.SourceIps = append(ei.SourceIps, p.String())
		}
	}
	return ei
}

// Entry parses an EntryInfo. An entry needs a resource, at least one
// action and a decision ("" is refused: an entry must say what it does).
func (ei EntryInfo) Entry() (Entry, error) {
	var e Entry
	var err error
	if e.Resource, err = ParseResource(ei.Resource); err != nil {
		return Entry{}, err
	}
	for _, s := range ei.Actions {
		a, err := ParseAction(s)
		if err != nil {
			return Entry{}, err
		}
		e.Actions |= a
	}
	if e.Actions == 0 {
		return Entry{}, fmt.Errorf("%w: entry of %s has no action", ErrInvalid, ei.Resource)
	}
	for _, s := range ei.SourceIps {
		p, err := ParseSourceIP(s)
		if err != nil {
			return Entry{}, err
		}
		e.SourceIPs = append(e.SourceIPs, p)
	}
	if e.Decision, err = ParseDecision(ei.Decision); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Parse parses an AclInfo into the username of its subject and its
// entries by policy type.
func (info *AclInfo) Parse() (string, ACL, error) {
	user, err := ParseSubject(info.Subject)
	if err != nil {
		return "", ACL{}, err
	}
	var acl ACL
	var errs []error
	for _, p := range info.Policies {
		t, err := ParsePolicyType(p.PolicyType)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ei := range p.Entries {
			e, err := ei.Entry()
			if err != nil {
				errs = append(errs, err)
				continue
			}
			acl.Put(t, e)
		}
	}
	return user, acl, errors.Join(errs...)
}

// sourceIPOf parses the IP of a "host:port" or bare host address; an
// address that does not parse gives the zero Addr (matched only by
// entries without source IPs).
func sourceIPOf(addr string) netip.Addr {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(addr)
	return a.Unmap()
}
