package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// TestTLSServerConfig: Apache's tls.* keys, from broker.conf and from the
// tls.config.file they name; permissive by default once a key is given;
// a self-signed certificate in test mode; bad values refuse to start.
func TestTLSServerConfig(t *testing.T) {
	cfg, mode, err := tlsServerConfig(nil)
	require.NoError(t, err)
	require.Nil(t, cfg)
	require.Equal(t, remoting.TLSDisabled, mode)

	cfg, mode, err = tlsServerConfig(map[string]string{"tls.test.mode.enable": "true"})
	require.NoError(t, err)
	require.Equal(t, remoting.TLSPermissive, mode)
	require.Len(t, cfg.Certificates, 1)

	dir := t.TempDir()
	file := filepath.Join(dir, "tls.properties")
	require.NoError(t, os.WriteFile(file, []byte("tls.server.mode=enforcing\ntls.server.need.client.auth=none\n"), 0o600))
	props := map[string]string{"tls.config.file": file, "brokerName": "b", "tls.server.need.client.auth": "none"}
	tp, err := takeTLSProperties(props)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"brokerName": "b"}, props, "the tls keys are taken out")
	_, mode, err = tlsServerConfig(tp)
	require.NoError(t, err)
	require.Equal(t, remoting.TLSEnforcing, mode)

	for _, bad := range []map[string]string{
		{"tls.server.mode": "sometimes"},
		{"tls.server.mode": "enforcing", "tls.test.mode.enable": "false"},
		{"tls.server.mode": "enforcing", "tls.server.certPath": filepath.Join(dir, "none.pem"), "tls.server.keyPath": filepath.Join(dir, "none.key")},
		{"tls.server.mode": "enforcing", "tls.server.keyPassword": "pw"},
		{"tls.server.mode": "enforcing", "tls.server.need.client.auth": "require"},
		{"tls.server.mode": "enforcing", "tls.server.need.client.auth": "maybe"},
	} {
		_, _, err := tlsServerConfig(bad)
		require.Error(t, err, "%v", bad)
	}
	_, err = takeTLSProperties(map[string]string{"tls.config.file": filepath.Join(dir, "missing")})
	require.True(t, err != nil && strings.Contains(err.Error(), "tls.config.file"))
}
