package broker

import (
	"context"
	"encoding/json"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/filter"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// SQL92 property filters (RocketMQ's ExpressionMessageFilter and
// ConsumerFilterManager). A consumer's SQL92 expression is compiled once:
// when its heartbeat stores the subscription (clients.Subscription.SQL),
// or, for a pull that carries its expression, on first use through the
// broker's cache. The store asks the ConsumeQueue unit first (every tags
// code passes) and then the record, whose properties the expression is
// evaluated against.
//
// Refusals, as RocketMQ answers them:
//
//	pull carrying a malformed expression  SUBSCRIPTION_PARSE_FAILED (23)
//	pull of a group whose heartbeat's
//	  expression did not compile          FILTER_DATA_NOT_EXIST (27)
//	SQL92 while enablePropertyFilter=false SYSTEM_ERROR (1)
//	CHECK_CLIENT_CONFIG, malformed        SUBSCRIPTION_PARSE_FAILED (23)
//
// RocketMQ itself lets a pull carrying a malformed expression through
// unfiltered (ConsumerFilterManager.build returns null and the assert after
// it is off in production); here it is refused.

// filterCacheSize bounds the compiled expressions kept for pulls that
// carry their own (SelectorParser keeps 100).
const filterCacheSize = 256

// sqlFilter filters a pull by an SQL92 expression over the record's
// properties.
type sqlFilter struct{ e *filter.Expression }

// MatchTagsCode implements store.Filter: an SQL92 subscription decides by
// properties only.
func (sqlFilter) MatchTagsCode(int64) bool { return true }

// MatchRecord implements store.RecordFilter. A record that does not parse
// is not served.
func (f sqlFilter) MatchRecord(rec []byte) bool {
	r, err := message.Parse(rec)
	if err != nil {
		return false
	}
	return f.e.Match(r.Properties())
}

// MatchProperties implements arrivalFilter: the expression against an
// arriving message's encoded properties.
func (f sqlFilter) MatchProperties(props string) bool { return f.e.MatchString(props) }

// isTagType is ExpressionType.isTagType.
func isTagType(t string) bool { return t == "" || t == clients.ExpressionTag }

// requestFilter sets p.filter from a pull that carries its subscription
// (PullSysFlag subscription bit).
func (b *Broker) requestFilter(p *pullRequest) *remoting.Command {
	if isTagType(p.expressionType) {
		if f, ok := b.registeredSQL(p); ok {
			p.filter = f
			return nil
		}
		p.filter = tagFilter(p.subscription)
		return nil
	}
	if p.subscription == "" || p.expressionType != clients.ExpressionSQL92 {
		return errResponse(remoting.SubscriptionParseFailed, "parse the consumer's subscription failed")
	}
	e, err := b.filterCache().Compile(p.subscription)
	if err != nil {
		b.log.Warn("parsing the consumer's subscription failed", "group", p.group, "topic", p.topic, "expression", p.subscription, "err", err)
		return errResponse(remoting.SubscriptionParseFailed, "parse the consumer's subscription failed")
	}
	if b.opts.DisablePropertyFilter {
		return propertyFilterOff(p.expressionType)
	}
	p.filter = sqlFilter{e}
	return nil
}

// registeredSQL serves the Go client's pull consumer, which sends an SQL92
// subscription's expression with expressionType TAG: when the group's
// heartbeat registered that very expression as SQL92 for the topic, the
// registered filter applies (RocketMQ would take it as a tag).
func (b *Broker) registeredSQL(p *pullRequest) (store.Filter, bool) {
	sub, ok := b.clients.Subscription(p.group, p.topic)
	if !ok || sub.ExpressionType != clients.ExpressionSQL92 || sub.SQL == nil || sub.SubString != p.subscription ||
		b.opts.DisablePropertyFilter {
		return nil, false
	}
	return sqlFilter{sub.SQL}, true
}

// subscriptionFilterSQL sets p.filter from a heartbeat's non-TAG
// subscription.
func (b *Broker) subscriptionFilterSQL(p *pullRequest, sub clients.Subscription) *remoting.Command {
	if sub.SQL == nil {
		return errResponse(remoting.FilterDataNotExist, "The broker's consumer filter data is not exist!Your expression may be wrong!")
	}
	if b.opts.DisablePropertyFilter {
		return propertyFilterOff(sub.ExpressionType)
	}
	p.filter = sqlFilter{sub.SQL}
	return nil
}

func propertyFilterOff(typ string) *remoting.Command {
	return errResponse(remoting.SystemError, "The broker does not support consumer to filter message by %s", typ)
}

// filterCache returns the broker's cache of compiled expressions.
func (b *Broker) filterCache() *filter.Cache {
	b.filtersOnce.Do(func() { b.filters = filter.NewCache(filterCacheSize) })
	return b.filters
}

// checkClientBody is CheckClientRequestBody.
type checkClientBody struct {
	ClientID         string                    `json:"clientId"`
	Group            string                    `json:"group"`
	SubscriptionData *clients.SubscriptionData `json:"subscriptionData"`
}

// processCheckClientConfig handles CHECK_CLIENT_CONFIG (46), which Java
// consumers send at start for each non-TAG subscription
// (ClientManageProcessor.checkClientConfig): SUCCESS for TAG expressions
// and when the expression compiles, SYSTEM_ERROR when property filters are
// off, SUBSCRIPTION_PARSE_FAILED with the compile error otherwise.
func (b *Broker) processCheckClientConfig(_ context.Context, req *remoting.Request) *remoting.Command {
	var body checkClientBody
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return errResponse(remoting.SystemError, "bad CheckClientRequestBody: %v", err)
		}
	}
	sd := body.SubscriptionData
	if sd == nil || isTagType(sd.ExpressionType) {
		return remoting.NewResponse(remoting.Success, "")
	}
	if b.opts.DisablePropertyFilter {
		return propertyFilterOff(sd.ExpressionType)
	}
	if sd.ExpressionType != clients.ExpressionSQL92 {
		return errResponse(remoting.SubscriptionParseFailed, "expression type %s is not supported", sd.ExpressionType)
	}
	if _, err := b.filterCache().Compile(sd.SubString); err != nil {
		b.log.Warn("a client's filter expression does not compile", "client", body.ClientID, "group", body.Group,
			"expression", sd.SubString, "err", err)
		return remoting.NewResponse(remoting.SubscriptionParseFailed, err.Error())
	}
	return remoting.NewResponse(remoting.Success, "")
}

// registerSemantics wires the processors of filters, request-reply and
// lite pull.
func (b *Broker) registerSemantics() {
	b.srv.RegisterFunc(remoting.CheckClientConfig, b.processCheckClientConfig)
	b.srv.RegisterFunc(remoting.SendReplyMessage, b.processSendReply)
	b.srv.RegisterFunc(remoting.SendReplyMessageV2, b.processSendReply)
	b.srv.OnClose(b.requesters.closed)
	b.srv.RegisterFunc(remoting.LitePullMessage, b.processLitePull)
}
