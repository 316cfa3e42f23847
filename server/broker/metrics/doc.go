// Package metrics serves a broker's Prometheus metrics, its health and
// net/http/pprof over HTTP, as RocketMQ 5 does with
// metricsExporterType=PROM (on metricsPromExporterPort, 5557 by default):
//
//	/metrics        Prometheus text (or protobuf) exposition
//	/healthz        200 "ready", or 503 with why the broker cannot serve
//	/debug/pprof/   the Go profiles
//
// Metric names and labels are those RocketMQ 5's broker exports
// (BrokerMetricsConstant, DefaultStoreMetricsConstant) as its
// OpenTelemetry Prometheus exporter writes them, so dashboards made for
// RocketMQ work unchanged: a gauge with a unit gets the unit as a suffix
// (rocketmq_consumer_lag_latency_milliseconds, rocketmq_storage_size_bytes).
// Every series carries the broker's constant labels (cluster, node_type,
// node_id). What RocketMQ has no metric for is named rocketstore_...
//
//	rocketmq_messages_in_total{topic,message_type,is_system}           messages put
//	rocketmq_throughput_in_total{topic,message_type,is_system}         bytes put
//	rocketmq_message_size{topic,message_type,is_system}                histogram of record sizes
//	rocketmq_messages_out_total{topic,consumer_group,is_system}        messages pulled
//	rocketmq_throughput_out_total{topic,consumer_group,is_system}      bytes pulled
//	rocketmq_consumer_lag_messages{consumer_group,topic,is_retry,is_system}
//	rocketmq_consumer_lag_latency_milliseconds{...same}                age of the oldest unconsumed message
//	rocketstore_consumer_lag_series_omitted                            both: at most metricsQueueSeriesLimit
//	                                                                   (1,000) pairs, the largest lags
//	rocketstore_consumer_queue_lag_messages{consumer_group,topic,queue_id}  at most metricsQueueSeriesLimit
//	rocketstore_consumer_queue_lag_series_omitted                      (1,000 by default) of the largest lags
//	rocketmq_producer_connections{language,version,protocol_type}
//	rocketmq_consumer_connections{consumer_group,language,version,consume_mode,protocol_type,is_system}
//	rocketmq_topic_number, rocketmq_consumer_group_number, rocketmq_broker_permission
//	rocketmq_storage_size_bytes, rocketmq_storage_flush_behind_bytes,
//	rocketmq_storage_dispatch_behind_bytes, rocketmq_storage_message_reserve_time_milliseconds
//	rocketstore_commitlog_disk_ratio, rocketstore_consumequeue_disk_ratio
//	rocketstore_commitlog_min_offset_bytes, rocketstore_commitlog_max_offset_bytes
//	rocketstore_pull_requests_held
//	rocketstore_put_latency_seconds, rocketstore_flush_latency_seconds   histograms
//
// plus the Go runtime's go_* and process_* metrics.
//
// The package reads the broker through Source at scrape time: counting
// costs the broker nothing but the atomic adds it makes anyway.
package metrics
