package main

import (
	"flag"

	"github.com/rocketstore/rocketstore/server/broker"
)

// defaultPromExporterPort is RocketMQ's metricsPromExporterPort default.
const defaultPromExporterPort = 5557

// applyMetricsFlags sets the metrics options from the flags of fs given
// on the command line, over broker.conf's keys.
func applyMetricsFlags(o *broker.Options, fs *flag.FlagSet, exporterType, host string, port int) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "metricsExporterType":
			o.MetricsExporterType = exporterType
		case "metricsPromExporterHost":
			o.MetricsPromExporterHost = host
		case "metricsPromExporterPort":
			o.MetricsPromExporterPort = port
		}
	})
}
