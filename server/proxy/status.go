package proxy

import (
	"errors"

	"github.com/rocketstore/rocketstore/server/broker"
	"github.com/rocketstore/rocketstore/server/broker/pop"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// codeError is an error with the Code a client is answered.
type codeError struct {
	code v2.Code
	msg  string
}

func (e *codeError) Error() string { return e.code.String() + ": " + e.msg }

func fail(code v2.Code, msg string) error { return &codeError{code, msg} }

func okStatus() *v2.Status { return &v2.Status{Code: v2.Code_OK, Message: "OK"} }

// statusOf is the one place where errors become the Status clients read,
// as Apache's ResponseBuilder.buildStatus and GrpcProxyException map them.
func statusOf(err error) *v2.Status {
	if err == nil {
		return okStatus()
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return &v2.Status{Code: ce.code, Message: ce.msg}
	}
	var se *broker.SendError
	if errors.As(err, &se) {
		return &v2.Status{Code: remotingCode(se.Code), Message: se.Remark}
	}
	switch {
	case errors.Is(err, pop.ErrBadHandle), errors.Is(err, pop.ErrUnknownHandle), errors.Is(err, pop.ErrStaleHandle):
		return &v2.Status{Code: v2.Code_INVALID_RECEIPT_HANDLE, Message: err.Error()}
	case errors.Is(err, pop.ErrClosed):
		return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: "the broker is shutting down"}
	}
	return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: err.Error()}
}

// remotingCode maps a broker's remoting response code (RESPONSE_CODE_MAPPING,
// and the topic check of TopicRouteHelper).
func remotingCode(c int) v2.Code {
	switch c {
	case remoting.Success:
		return v2.Code_OK
	case remoting.SystemBusy:
		return v2.Code_TOO_MANY_REQUESTS
	case remoting.RequestCodeNotSupported:
		return v2.Code_NOT_IMPLEMENTED
	case remoting.SubscriptionGroupNotExist:
		return v2.Code_CONSUMER_GROUP_NOT_FOUND
	case remoting.TopicNotExist:
		return v2.Code_TOPIC_NOT_FOUND
	case remoting.NoPermission:
		return v2.Code_FORBIDDEN
	}
	return v2.Code_INTERNAL_SERVER_ERROR
}
