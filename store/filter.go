package store

import "github.com/rocketstore/rocketstore/message"

// Filter decides from a ConsumeQueue unit's tag hash code whether a message
// goes to the consumer (RocketMQ's MessageFilter.isMatchedByConsumeQueue).
// A nil Filter matches everything.
type Filter interface {
	MatchTagsCode(tagsCode int64) bool
}

// RecordFilter is a Filter that also decides from the stored record, once
// it has been read (RocketMQ's MessageFilter.isMatchedByCommitLog): SQL92
// property filters. GetMessage calls MatchRecord only for units that
// passed MatchTagsCode; rec is the whole record, aliasing the mapped
// CommitLog, valid only during the call.
type RecordFilter interface {
	Filter
	MatchRecord(rec []byte) bool
}

// TagFilter matches messages whose tag is one of a set, by tag hash code,
// as a consumer's subscription "TagA || TagB" does. Messages without a tag
// have code 0 and match only if "" is in the set.
type TagFilter struct {
	codes []int64
}

// NewTagFilter returns a filter for the tags given. No tags, or a "*" among
// them, means every message: it returns nil.
func NewTagFilter(tags ...string) Filter {
	f := &TagFilter{}
	for _, t := range tags {
		if t == "*" {
			return nil
		}
		f.codes = append(f.codes, message.TagsCode(t))
	}
	if len(f.codes) == 0 {
		return nil
	}
	return f
}

// MatchTagsCode implements Filter.
func (f *TagFilter) MatchTagsCode(code int64) bool {
	for _, c := range f.codes {
		if c == code {
			return true
		}
	}
	return false
}
