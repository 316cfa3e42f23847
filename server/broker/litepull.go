package broker

import (
	"context"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// processLitePull handles LITE_PULL_MESSAGE (361), which the Java lite
// pull consumer (DefaultLitePullConsumer) sends instead of PULL_MESSAGE,
// with PullSysFlag's lite-pull bit (16) set (MQClientAPIImpl.pullMessage).
// RocketMQ serves it with the pull processor, the same header and
// answers, unless litePullMessageEnable is off; a slave without
// slaveReadEnable rejects it first, as it rejects pulls.
func (b *Broker) processLitePull(ctx context.Context, req *remoting.Request) *remoting.Command {
	if resp := b.rejectPull(); resp != nil {
		return resp
	}
	if b.opts.DisableLitePullMessage {
		return errResponse(remoting.NoPermission, "the broker[%s] for lite pull consumer is forbidden", b.opts.BrokerIP1)
	}
	return b.processPull(ctx, req)
}
