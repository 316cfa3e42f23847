package remoting

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testTLSConfig(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// TestTLSListener_Modes: enforcing serves TLS only; permissive serves TLS
// and plaintext on one port; the client reaches it with the Dial option.
func TestTLSListener_Modes(t *testing.T) {
	checkNoLeaks(t)
	cfg := testTLSConfig(t)
	tlsDial := func(ctx context.Context, addr string) (net.Conn, error) {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}
		return d.DialContext(ctx, "tcp", addr)
	}
	for _, tc := range []struct {
		mode    TLSMode
		plainOK bool
	}{{TLSEnforcing, false}, {TLSPermissive, true}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			s := newServer(t, Options{})
			s.RegisterFunc(SendMessage, func(_ context.Context, req *Request) *Command {
				resp := NewResponse(Success, "")
				resp.Body = req.Body
				return resp
			})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			served := make(chan error, 1)
			go func() { served <- s.Serve(TLSListener(l, cfg, tc.mode)) }()
			t.Cleanup(func() { s.Close(); recv(t, served) })
			addr := l.Addr().String()

			tc1 := newClient(t, Options{Dial: tlsDial})
			resp, err := tc1.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, nil, []byte("over tls")))
			require.NoError(t, err)
			require.Equal(t, "over tls", string(resp.Body))

			pc := newClient(t, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			resp, err = pc.Invoke(ctx, addr, NewRequest(SendMessage, nil, []byte("plain")))
			if tc.plainOK {
				require.NoError(t, err)
				require.Equal(t, "plain", string(resp.Body))
			} else {
				require.Error(t, err, "a plaintext client gets nothing from an enforcing port")
			}
		})
	}
	_, err := ParseTLSMode("sometimes")
	require.Error(t, err)
}
