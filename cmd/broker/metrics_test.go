package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker"
)

func TestMetricsKeysAndFlags(t *testing.T) {
	props, err := parseProperties(strings.NewReader(`metricsExporterType=PROM
metricsPromExporterHost=0.0.0.0
metricsPromExporterPort=5558
metricsLabel=env:prod,dc:a
`))
	require.NoError(t, err)
	o := broker.Options{MetricsPromExporterPort: defaultPromExporterPort}
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.Equal(t, "PROM", o.MetricsExporterType)
	require.Equal(t, "0.0.0.0", o.MetricsPromExporterHost)
	require.Equal(t, 5558, o.MetricsPromExporterPort)
	require.Equal(t, "env:prod,dc:a", o.MetricsLabel)

	// Flags given on the command line win; those not given leave the keys.
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	typ := fs.String("metricsExporterType", "", "")
	host := fs.String("metricsPromExporterHost", "", "")
	port := fs.Int("metricsPromExporterPort", defaultPromExporterPort, "")
	require.NoError(t, fs.Parse([]string{"-metricsPromExporterPort", "6000"}))
	applyMetricsFlags(&o, fs, *typ, *host, *port)
	require.Equal(t, "PROM", o.MetricsExporterType)
	require.Equal(t, "0.0.0.0", o.MetricsPromExporterHost)
	require.Equal(t, 6000, o.MetricsPromExporterPort)

	// Without the keys, the flag's default is RocketMQ's port.
	o = broker.Options{MetricsPromExporterPort: defaultPromExporterPort}
	fs = flag.NewFlagSet("broker", flag.ContinueOnError)
	typ = fs.String("metricsExporterType", "", "")
	host = fs.String("metricsPromExporterHost", "", "")
	port = fs.Int("metricsPromExporterPort", defaultPromExporterPort, "")
	require.NoError(t, fs.Parse([]string{"-metricsExporterType", "PROM"}))
	applyMetricsFlags(&o, fs, *typ, *host, *port)
	require.Equal(t, "PROM", o.MetricsExporterType)
	require.Equal(t, 5557, o.MetricsPromExporterPort)
}
