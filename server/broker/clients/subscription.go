package clients

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/filter"
)

// Subscription is a consumer group's subscription to one topic, as the
// broker filters with it (RocketMQ's SubscriptionData in the
// ConsumerGroupInfo subscription table).
//
// A Subscription returned by the Manager shares its Tags and Codes with the
// Manager's copy: they are never modified, and the caller must not modify
// them either.
type Subscription struct {
	Topic string
	// SubString is the expression as the client sent it: "*", "a || b",
	// or an SQL92 expression.
	SubString string
	// ExpressionType is ExpressionTag or ExpressionSQL92 ("" is stored as
	// ExpressionTag).
	ExpressionType string
	// Tags are the subscribed tags of a TAG expression, sorted, without
	// duplicates or empty strings; none for "*". They come from the
	// client's tagsSet, or from SubString split on "||" when the client
	// sent no tagsSet for a tag expression.
	Tags []string
	// Codes are the tags codes of Tags, in the same order, as the broker
	// stores them in ConsumeQueue units: Java's String.hashCode
	// (message.TagsCode). Computed here; the client's codeSet is not
	// trusted, since the Go client hashes UTF-8 bytes instead.
	Codes []int64
	// SubVersion orders a group's subscriptions to one topic: a heartbeat
	// replaces the stored one only with a greater version. The pull
	// processor answers SUBSCRIPTION_NOT_LATEST when a pull carries a
	// newer one.
	SubVersion int64
	// ClassFilterMode is the long-removed class filter; such a
	// subscription matches every message.
	ClassFilterMode bool
	// SQL is the compiled expression of an SQL92 subscription
	// (ConsumerFilterData's compiled expression); nil for TAG ones and
	// when FilterErr is set. It is compiled once, when the subscription is
	// stored, and shared by every copy.
	SQL *filter.Expression
	// FilterErr says why a non-TAG subscription has no SQL: its
	// expression does not compile, or its type is not SQL92. The pull
	// processor then answers FILTER_DATA_NOT_EXIST, as RocketMQ does when
	// ConsumerFilterManager could not build the filter data.
	FilterErr error
}

// compile sets SQL or FilterErr of a non-TAG subscription, reusing old's
// when it filters alike.
func (s *Subscription) compile(old *Subscription) {
	if s.ExpressionType == ExpressionTag {
		return
	}
	if old != nil && s.sameFilter(old) {
		s.SQL, s.FilterErr = old.SQL, old.FilterErr
		return
	}
	s.SQL, s.FilterErr = nil, nil
	if s.ExpressionType != ExpressionSQL92 {
		s.FilterErr = fmt.Errorf("clients: expression type %q is not supported; use TAG or SQL92", s.ExpressionType)
		return
	}
	s.SQL, s.FilterErr = filter.Compile(s.SubString)
}

// newSubscription builds a Subscription from what the client sent.
func newSubscription(sd SubscriptionData) Subscription {
	s := Subscription{
		Topic:           sd.Topic,
		SubString:       sd.SubString,
		ExpressionType:  sd.ExpressionType,
		SubVersion:      sd.SubVersion,
		ClassFilterMode: sd.ClassFilterMode,
	}
	if s.ExpressionType == "" {
		s.ExpressionType = ExpressionTag
	}
	if s.ExpressionType != ExpressionTag {
		return s
	}
	tags := sd.TagsSet
	if len(tags) == 0 && !isSubAll(sd.SubString) {
		// No client sends this, but the expression says what was meant.
		tags = strings.Split(sd.SubString, "||")
		for i := range tags {
			tags[i] = strings.TrimSpace(tags[i])
		}
	}
	for _, t := range tags {
		if t != "" {
			s.Tags = append(s.Tags, t)
		}
	}
	slices.Sort(s.Tags)
	s.Tags = slices.Compact(s.Tags)
	if len(s.Tags) > 0 {
		s.Codes = make([]int64, len(s.Tags))
		for i, t := range s.Tags {
			s.Codes[i] = message.TagsCode(t)
		}
	}
	return s
}

func isSubAll(expr string) bool {
	expr = strings.TrimSpace(expr)
	return expr == "" || expr == "*"
}

// MatchesAll reports whether the subscription takes every message of its
// topic: a TAG expression "*" (or empty), or class filter mode.
func (s Subscription) MatchesAll() bool {
	return s.ClassFilterMode || s.ExpressionType == ExpressionTag && len(s.Tags) == 0
}

// MatchesTagsCode reports whether a message whose ConsumeQueue unit holds
// code passes the subscription's tag filter (RocketMQ's
// ExpressionMessageFilter.isMatchedByConsumeQueue): always for MatchesAll
// and for non-TAG expressions (those are filtered elsewhere), else when
// code is one of Codes. Codes can collide; MatchesTag settles a match.
func (s Subscription) MatchesTagsCode(code int64) bool {
	if s.MatchesAll() || s.ExpressionType != ExpressionTag {
		return true
	}
	return slices.Contains(s.Codes, code)
}

// MatchesTag reports whether a message with the given tag passes the
// subscription's tag filter exactly; "" is a message without tags. It is
// true for MatchesAll and for non-TAG expressions.
func (s Subscription) MatchesTag(tag string) bool {
	if s.MatchesAll() || s.ExpressionType != ExpressionTag {
		return true
	}
	_, found := slices.BinarySearch(s.Tags, tag)
	return found
}

// sameFilter reports whether s and o filter alike (versions aside).
func (s *Subscription) sameFilter(o *Subscription) bool {
	return s.SubString == o.SubString && s.ExpressionType == o.ExpressionType &&
		s.ClassFilterMode == o.ClassFilterMode && slices.Equal(s.Tags, o.Tags)
}
