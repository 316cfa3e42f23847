package broker

import "github.com/rocketstore/rocketstore/server/remoting"

// registerAdminProcessors wires the admin request codes (RocketMQ's
// AdminBrokerProcessor) that mqadmin and the dashboard send.
func (b *Broker) registerAdminProcessors() {
	s := b.srv
	s.RegisterFunc(remoting.GetBrokerRuntimeInfo, b.processGetBrokerRuntimeInfo)
	s.RegisterFunc(remoting.GetBrokerConfig, b.processGetBrokerConfig)
	s.RegisterFunc(remoting.UpdateBrokerConfig, b.processUpdateBrokerConfig)
	s.RegisterFunc(remoting.GetTopicStatsInfo, b.processGetTopicStatsInfo)
	s.RegisterFunc(remoting.GetTopicConfig, b.processGetTopicConfig)
	s.RegisterFunc(remoting.UpdateAndCreateTopicList, b.processUpdateAndCreateTopicList)
	s.RegisterFunc(remoting.QueryTopicConsumeByWho, b.processQueryTopicConsumeByWho)
	s.RegisterFunc(remoting.GetSystemTopicListFromBroker, b.processGetSystemTopicList)
	s.RegisterFunc(remoting.UpdateAndCreateSubscriptionGroup, b.processUpdateAndCreateSubscriptionGroup)
	s.RegisterFunc(remoting.GetAllSubscriptionGroupConfig, b.processGetAllSubscriptionGroup)
	s.RegisterFunc(remoting.GetAllConsumerOffset, b.processGetAllConsumerOffset)
	s.RegisterFunc(remoting.GetAllDelayOffset, b.processGetAllDelayOffset)
	s.RegisterFunc(remoting.GetSubscriptionGroupConfig, b.processGetSubscriptionGroup)
	s.RegisterFunc(remoting.DeleteSubscriptionGroup, b.processDeleteSubscriptionGroup)
	s.RegisterFunc(remoting.GetConsumeStats, b.processGetConsumeStats)
	s.RegisterFunc(remoting.GetConsumerConnectionList, b.processGetConsumerConnectionList)
	s.RegisterFunc(remoting.GetProducerConnectionList, b.processGetProducerConnectionList)
	s.RegisterFunc(remoting.InvokeBrokerToResetOffset, b.processInvokeBrokerToResetOffset)
	s.RegisterFunc(remoting.InvokeBrokerToGetConsumerStatus, b.processInvokeBrokerToGetConsumerStatus)
	s.RegisterFunc(remoting.GetConsumerRunningInfo, b.processGetConsumerRunningInfo)
	s.RegisterFunc(remoting.ConsumeMessageDirectly, b.processConsumeMessageDirectly)
}
