// Package meta is the broker's persistent metadata, RocketMQ's
// TopicConfigManager (Topics), ConsumerOffsetManager (Offsets) and
// SubscriptionGroupManager (SubscriptionGroups), each kept in one JSON file
// under {storeRoot}/config/:
//
//	topics.json             {"dataVersion":{...},"topicConfigTable":{"T":{TopicConfig}}}
//	consumerOffset.json     {"offsetTable":{"topic@group":{0:123,1:456}}}
//	subscriptionGroup.json  {"dataVersion":{...},"forbiddenTable":{},
//	                         "subscriptionGroupTable":{"g":{SubscriptionGroupConfig}}}
//
// The files are written as a Java broker writes them: fastjson's pretty
// form, tabs, queue ids as bare numbers (see internal/fastjson), keys
// sorted. They are read in that form or as standard JSON (quoted ids, any
// white space), with RocketMQ's defaults for absent fields, so a store
// directory moves between rocketstore and Apache RocketMQ 4.x or 5.x both
// ways.
//
// # Durability
//
// A write goes to {file}.tmp, which is fsynced; the current file becomes
// {file}.bak (a hard link); the temp file is renamed over the file; the
// folder is fsynced. Opening reads the file, or {file}.bak when the file is
// missing, empty or does not parse (with a logged warning); a missing file
// and .bak mean an empty config. When both are unreadable Open fails with
// ErrCorrupt rather than start empty, which RocketMQ would do.
//
// Topics and SubscriptionGroups bump their data version and write their
// file on every change, before the changing method returns. Offsets keeps
// commits in memory (a commit is a map store under a per-topic@group lock,
// free of allocation once the queue is known) and writes them every 5 s
// from StartPersist, on Persist and on Close.
//
// All three types are safe for concurrent use. Configs they return share
// their maps and slices with them: read those, never modify them.
package meta
