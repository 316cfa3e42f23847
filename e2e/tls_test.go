package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// writeTestCert makes a self-signed ECDSA certificate for 127.0.0.1 and
// writes it and its key as PEM files in dir.
func writeTestCert(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certPath, keyPath = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	require.NoError(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	return certPath, keyPath
}

// TestTLS_GoClientWithTls: cmd/broker serving TLS (Apache's tls.* keys,
// from a tls.properties file named by tls.config.file) and access control:
// the official Go client with WithTls(true) and credentials sends and
// consumes; in enforcing mode a plaintext client gets nowhere, in
// permissive mode it is served on the same port.
//
// The Go client's WithTls sets a variable of the package
// (remote.DefaultRemotingClientConfig, which every client's options point
// to): once one client has it, every client of the process dials TLS. The
// plaintext clients here are therefore ours, and the test sets it back.
func TestTLS_GoClientWithTls(t *testing.T) {
	t.Cleanup(func() {
		_, err := rocketmq.NewProducer(producer.WithNameServer([]string{"127.0.0.1:1"}), producer.WithTls(false)) // resets the shared setting
		require.NoError(t, err)
	})
	for _, mode := range []string{"enforcing", "permissive"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cert, key := writeTestCert(t, dir)
			props := filepath.Join(dir, "tls.properties")
			require.NoError(t, os.WriteFile(props, []byte(fmt.Sprintf(
				"tls.server.mode=%s\ntls.server.certPath=%s\ntls.server.keyPath=%s\ntls.server.need.client.auth=none\n", mode, cert, key)), 0o600))
			b := startAuthBroker(t, "tls.config.file="+props+"\n", mode == "enforcing")
			b.createTopic("tlsTopic")

			p := authProducer(t, b, rootUser, rootPass, producer.WithTls(true))
			require.NoError(t, sendOne(p, "tlsTopic", "over tls"))

			var got atomic.Int32
			pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{b.ns}), consumer.WithGroupName(unique("tlsG")),
				consumer.WithInstance(unique("tci")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithTls(true),
				consumer.WithCredentials(primitive.Credentials{AccessKey: rootUser, SecretKey: rootPass}))
			require.NoError(t, err)
			require.NoError(t, pc.Subscribe("tlsTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					if string(m.Body) == "over tls" {
						got.Add(1)
					}
				}
				return consumer.ConsumeSuccess, nil
			}))
			require.NoError(t, pc.Start())
			defer pc.Shutdown()
			require.Eventually(t, func() bool { return got.Load() >= 1 }, 30*time.Second, 20*time.Millisecond)

			plain, err := remoting.NewClient(remoting.Options{})
			require.NoError(t, err)
			defer plain.Close()
			for _, addr := range []string{b.addr, b.ns} {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "tlsTopic", "queueId": "0"}, nil)
				auth.SignCommand(req, rootUser, rootPass)
				resp, err := plain.Invoke(ctx, addr, req)
				cancel()
				if mode == "enforcing" {
					require.Error(t, err, "a plaintext client on an enforcing port (%s)", addr)
				} else {
					require.NoError(t, err, "a plaintext client on a permissive port (%s)", addr)
					require.NotEqual(t, remoting.NoPermission, resp.Code)
				}
			}
		})
	}
}
