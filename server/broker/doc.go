// Package broker is the RocketMQ broker on top of the store: the request
// processors a producer and a consumer need, on RocketMQ's remoting
// protocol, so that applications written for Apache RocketMQ run against it
// unchanged.
//
// A Broker serves one store. It registers with its name servers every 30 s
// (and at once when its topics change), takes sends (SEND_MESSAGE,
// SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) with topic auto-creation from TBW102,
// answers pulls with the stored records as they are (PULL_MESSAGE), holding
// a pull that finds nothing until a message arrives or its suspend timeout
// passes (long polling), and keeps consumer offsets, topic configs and
// subscription groups under {store}/config. Client bookkeeping (heartbeats,
// consumer groups) is in package clients; the config files in package meta.
//
// Beyond that: SQL92 property filters on pull (filter.go, with package
// server/filter) and CHECK_CLIENT_CONFIG; LITE_PULL_MESSAGE (litepull.go);
// request-reply, SEND_REPLY_MESSAGE(_V2) pushed to the requester with
// PUSH_REPLY_MESSAGE_TO_CLIENT (reply.go); transactions with check-back whose
// check counts live in the half messages (tx.go, txcheck.go).
//
// The admin codes of RocketMQ's AdminBrokerProcessor, which mqadmin and
// the dashboard send, are in the admin_*.go files: runtime info and
// config, topic stats and configs, subscription groups, consume stats and
// lag, connection lists, offset reset (told to the group's consumers with
// RESET_CONSUMER_CLIENT_OFFSET), and the requests forwarded to a client
// (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY). The counters
// behind the runtime info cost the put path one atomic add (the store's
// arrival listener); a ticker samples them once a second for the rates.
package broker
