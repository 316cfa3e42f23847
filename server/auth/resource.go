package auth

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid marks a user, resource, action, decision or source IP that
// does not parse or validate.
var ErrInvalid = errors.New("auth: invalid")

// ResourceType is the kind of a resource (RocketMQ's ResourceType).
type ResourceType uint8

// Resource types. TypeAny is the "*" resource: everything.
const (
	TypeUnknown ResourceType = iota
	TypeAny
	TypeCluster
	TypeNamespace
	TypeTopic
	TypeGroup
)

var typeNames = [...]string{TypeAny: "*", TypeCluster: "Cluster", TypeNamespace: "Namespace", TypeTopic: "Topic", TypeGroup: "Group"}

// String is the type's name as in a resource key ("Topic").
func (t ResourceType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("ResourceType(%d)", uint8(t))
}

// Pattern is how an entry's resource name matches (RocketMQ's
// ResourcePattern).
type Pattern uint8

// Patterns.
const (
	Literal  Pattern = iota // the name itself
	Prefixed                // names starting with Name ("orders*")
	AnyName                 // every name of the type ("Topic:*")
)

// Resource is a resource: of a request (always Literal) or of a policy
// entry.
type Resource struct {
	Type    ResourceType
	Name    string // empty for AnyName and TypeAny
	Pattern Pattern
}

// Topic returns the literal resource Topic:name.
func Topic(name string) Resource { return Resource{Type: TypeTopic, Name: name} }

// Cluster returns the literal resource Cluster:name.
func Cluster(name string) Resource { return Resource{Type: TypeCluster, Name: name} }

// RetryGroupPrefix is the prefix of a group's retry topic (%RETRY%).
const RetryGroupPrefix = "%RETRY%"

// dlqPrefix is the prefix of a group's dead letter topic.
const dlqPrefix = "%DLQ%"

// IsRetryTopic reports whether name is a retry topic (%RETRY%group).
func IsRetryTopic(name string) bool { return strings.HasPrefix(name, RetryGroupPrefix) }

// Group returns the literal resource Group:name; a retry or dead letter
// topic name (%RETRY%g) stands for its group g, as
// Resource.ofGroup does upstream.
func Group(name string) Resource {
	if IsRetryTopic(name) { // NamespaceUtil.withOutRetryAndDLQ, only for a retry name as upstream
		name = strings.TrimPrefix(strings.TrimPrefix(name, RetryGroupPrefix), dlqPrefix)
	}
	return Resource{Type: TypeGroup, Name: name}
}

// TopicOrGroup is Topic(name), or Group(name) for a retry topic: how
// upstream maps a topic field of a request header.
func TopicOrGroup(name string) Resource {
	if IsRetryTopic(name) {
		return Group(name)
	}
	return Topic(name)
}

// ParseResource parses a resource key: "*", "Type:*", "Type:prefix*" or
// "Type:name", the type's name matched case-insensitively.
func ParseResource(key string) (Resource, error) {
	key = strings.TrimSpace(key)
	if key == "*" {
		return Resource{Type: TypeAny, Pattern: AnyName}, nil
	}
	typ, name, ok := strings.Cut(key, ":")
	if !ok {
		return Resource{}, fmt.Errorf("%w: resource %q: want Type:name, Type:prefix*, Type:* or *", ErrInvalid, key)
	}
	r := Resource{Type: parseType(typ)}
	if r.Type == TypeUnknown || r.Type == TypeAny {
		return Resource{}, fmt.Errorf("%w: resource %q: type %q is not Cluster, Namespace, Topic or Group", ErrInvalid, key, typ)
	}
	switch {
	case name == "*":
		r.Pattern = AnyName
	case strings.HasSuffix(name, "*"):
		r.Name, r.Pattern = strings.TrimSuffix(name, "*"), Prefixed
	case name == "":
		return Resource{}, fmt.Errorf("%w: resource %q has no name", ErrInvalid, key)
	default:
		r.Name = name
	}
	if strings.Contains(r.Name, "*") {
		return Resource{}, fmt.Errorf("%w: resource %q: '*' may only end the name", ErrInvalid, key)
	}
	return r, nil
}

func parseType(s string) ResourceType {
	for t, n := range typeNames {
		if n != "" && n != "*" && strings.EqualFold(n, strings.TrimSpace(s)) {
			return ResourceType(t)
		}
	}
	return TypeUnknown
}

// String is the resource's key: "*", "Topic:*", "Topic:orders*",
// "Topic:orders".
func (r Resource) String() string {
	switch {
	case r.Type == TypeAny:
		return "*"
	case r.Pattern == AnyName:
		return r.Type.String() + ":*"
	case r.Pattern == Prefixed:
		return r.Type.String() + ":" + r.Name + "*"
	}
	return r.Type.String() + ":" + r.Name
}

// Matches reports whether the entry resource r covers the request
// resource req (Resource.isMatch).
func (r Resource) Matches(req Resource) bool {
	if r.Type == TypeAny {
		return true
	}
	if r.Type != req.Type {
		return false
	}
	switch r.Pattern {
	case AnyName:
		return true
	case Prefixed:
		return strings.HasPrefix(req.Name, r.Name)
	}
	return req.Name == r.Name
}

// Actions is a set of actions (RocketMQ's Action), one bit each.
type Actions uint16

// Actions. All in an entry grants every action.
const (
	Pub Actions = 1 << iota
	Sub
	Create
	Update
	Delete
	Get
	List
	All
)

var actionNames = []struct {
	a    Actions
	name string
}{{All, "All"}, {Pub, "Pub"}, {Sub, "Sub"}, {Create, "Create"}, {Update, "Update"}, {Delete, "Delete"}, {Get, "Get"}, {List, "List"}}

// ParseAction parses one action name, case-insensitively. "Any" is
// refused, as upstream refuses it in a policy.
func ParseAction(s string) (Actions, error) {
	for _, n := range actionNames {
		if strings.EqualFold(n.name, strings.TrimSpace(s)) {
			return n.a, nil
		}
	}
	return 0, fmt.Errorf("%w: action %q: want All, Pub, Sub, Create, Update, Delete, Get or List", ErrInvalid, s)
}

// Names lists the actions' names, All first.
func (a Actions) Names() []string {
	var out []string
	for _, n := range actionNames {
		if a&n.a != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// String joins the names with commas.
func (a Actions) String() string { return strings.Join(a.Names(), ",") }

// Decision is an entry's Allow or Deny.
type Decision uint8

// Decisions.
const (
	Allow Decision = iota
	Deny
)

// String is "Allow" or "Deny".
func (d Decision) String() string {
	if d == Deny {
		return "Deny"
	}
	return "Allow"
}

// ParseDecision parses "Allow" or "Deny", case-insensitively.
func ParseDecision(s string) (Decision, error) {
	switch {
	case strings.EqualFold(s, "Allow"):
		return Allow, nil
	case strings.EqualFold(s, "Deny"):
		return Deny, nil
	}
	return 0, fmt.Errorf("%w: decision %q: want Allow or Deny", ErrInvalid, s)
}
