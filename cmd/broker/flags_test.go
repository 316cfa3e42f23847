package main

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCommandLine_RocketMQNames(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "10.0.0.1:9876;10.0.0.2:9876", "-store.dir", "/data/store"},
		{"-namesrvAddr", "10.0.0.1:9876;10.0.0.2:9876", "-storePathRootDir", "/data/store"},
		{"--namesrvAddr=10.0.0.1:9876;10.0.0.2:9876", "--storePathRootDir=/data/store"},
	} {
		cl, err := parseCommandLine(args, new(bytes.Buffer))
		require.NoError(t, err, args)
		opts, err := cl.options(func(string) string { return "" }, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		require.Equal(t, []string{"10.0.0.1:9876", "10.0.0.2:9876"}, opts.NamesrvAddrs, args)
		require.Equal(t, "/data/store", opts.StoreDir, args)
	}
}

func TestParseCommandLine_StrayArgument(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseCommandLine([]string{"-listen", ":10911", "oops", "-n", "10.0.0.1:9876"}, &stderr)
	var u errUsage
	require.True(t, errors.As(err, &u), "%v", err)
	require.Contains(t, stderr.String(), `unexpected argument "oops"`)

	_, err = parseCommandLine([]string{"-nosuchflag"}, &stderr)
	require.True(t, errors.As(err, &u), "%v", err)
	_, err = parseCommandLine([]string{"-h"}, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
}

// TestOptions_NamesrvAddrPrecedence: as in RocketMQ, NAMESRV_ADDR is the
// default, broker.conf's namesrvAddr overrides it, and -n overrides both.
func TestOptions_NamesrvAddrPrecedence(t *testing.T) {
	env := func(k string) string {
		if k == "NAMESRV_ADDR" {
			return "10.0.0.9:9876;10.0.0.8:9876"
		}
		return ""
	}
	log := slog.New(slog.DiscardHandler)
	opts, err := commandLine{}.options(env, log)
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.9:9876", "10.0.0.8:9876"}, opts.NamesrvAddrs)

	conf := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(conf, []byte("namesrvAddr=10.0.0.7:9876\n"), 0o644))
	opts, err = commandLine{confFile: conf}.options(env, log)
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.7:9876"}, opts.NamesrvAddrs)

	cl, err := parseCommandLine([]string{"-c", conf, "-namesrvAddr", "10.0.0.6:9876"}, new(bytes.Buffer))
	require.NoError(t, err)
	opts, err = cl.options(env, log)
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.6:9876"}, opts.NamesrvAddrs)
}

// TestBinary_StrayArgumentExits2: the built broker exits with status 2 and
// says which argument it did not take, before opening anything.
func TestBinary_StrayArgumentExits2(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(brokerBinary(t), "-store.dir", filepath.Join(dir, "store"), "stray", "-n", "127.0.0.1:1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 2, exit.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), `unexpected argument "stray"`)
	_, err = os.Stat(filepath.Join(dir, "store"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was opened")
}
