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
// Topics and SubscriptionGroups bump their data version on every change
// and make it durable before the changing method returns, without
// rewriting their file: the change is a record appended to {file}.journal
// and fsynced, and the changes made while one append is under way share
// the next (group commit). Once the journal holds as many bytes as the
// file (at least 1 MiB), the file is written whole as above and the
// journal starts over; Persist (called at shutdown) does the same, so a
// broker stopped cleanly leaves the whole table in the JSON file, as a
// Java broker expects. The journal's header names the version of the file
// it applies to (length and CRC); opening reads the file, then the
// journal's records up to a torn one, unless the file has changed since
// the journal was started (then the journal is ignored, with a warning).
// A change so costs one small append whatever the size of the table.
//
// Offsets keeps commits in memory (a commit is a map store under a
// per-topic@group lock, free of allocation once the queue is known) and
// writes them every 5 s from StartPersist (when something changed), on
// Persist and on Close.
//
// All three types are safe for concurrent use. Configs they return share
// their maps and slices with them: read those, never modify them.
package meta
