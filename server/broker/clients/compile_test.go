package clients

import "testing"

func TestSubscription_CompileSQL92(t *testing.T) {
	s := newSubscription(SubscriptionData{Topic: "T", SubString: "a > 1 AND b = 'x'", ExpressionType: ExpressionSQL92})
	s.compile(nil)
	if s.FilterErr != nil || s.SQL == nil {
		t.Fatalf("compile: %v", s.FilterErr)
	}
	if s.MatchesAll() || !s.MatchesTagsCode(12345) {
		t.Fatal("an SQL92 subscription must pass every tags code and not match all")
	}
	again := newSubscription(SubscriptionData{Topic: "T", SubString: "a > 1 AND b = 'x'", ExpressionType: ExpressionSQL92, SubVersion: 2})
	again.compile(&s)
	if again.SQL != s.SQL {
		t.Fatal("an unchanged expression was compiled again")
	}
	bad := newSubscription(SubscriptionData{Topic: "T", SubString: "a >", ExpressionType: ExpressionSQL92})
	bad.compile(nil)
	if bad.FilterErr == nil || bad.SQL != nil {
		t.Fatal("a malformed expression compiled")
	}
	other := newSubscription(SubscriptionData{Topic: "T", SubString: "x", ExpressionType: "JAVA"})
	other.compile(nil)
	if other.FilterErr == nil {
		t.Fatal("an unknown expression type was accepted")
	}
	tag := newSubscription(SubscriptionData{Topic: "T", SubString: "a || b"})
	tag.compile(nil)
	if tag.SQL != nil || tag.FilterErr != nil {
		t.Fatal("a TAG subscription got an SQL filter")
	}
}
