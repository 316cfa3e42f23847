package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// defaultTLSFile is where Apache RocketMQ reads its TLS settings when
// tls.config.file does not say (TlsSystemConfig).
const defaultTLSFile = "/etc/rocketmq/tls.properties"

// takeTLSProperties removes the tls.* keys from props and returns them,
// merged over the file tls.config.file names (or /etc/rocketmq/
// tls.properties when it exists), as Apache's TlsSystemConfig reads them.
func takeTLSProperties(props map[string]string) (map[string]string, error) {
	out := map[string]string{}
	file, named := props["tls.config.file"]
	if !named {
		if _, err := os.Stat(defaultTLSFile); err == nil {
			file = defaultTLSFile
		}
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("tls.config.file: %w", err)
		}
		fileProps, err := parseProperties(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for k, v := range fileProps {
			out[k] = v
		}
	}
	for k, v := range props {
		if strings.HasPrefix(k, "tls.") {
			if k != "tls.config.file" {
				out[k] = v
			}
			delete(props, k)
		}
	}
	return out, nil
}

// tlsServerConfig builds the remoting port's TLS from Apache's keys:
// tls.server.mode (disabled, permissive, enforcing; permissive when other
// tls.* keys are given without it, as Apache's default), tls.server.certPath
// and tls.server.keyPath (PEM), tls.server.need.client.auth (none,
// optional, require) with tls.server.trustCertPath (PEM CAs of the
// clients), tls.test.mode.enable (default true: without a certificate, a
// self-signed one made at start). No tls.* key: disabled.
func tlsServerConfig(p map[string]string) (*tls.Config, remoting.TLSMode, error) {
	if len(p) == 0 {
		return nil, remoting.TLSDisabled, nil
	}
	mode := remoting.TLSPermissive
	if v, ok := p["tls.server.mode"]; ok {
		var err error
		if mode, err = remoting.ParseTLSMode(v); err != nil {
			return nil, 0, err
		}
	}
	if mode == remoting.TLSDisabled {
		return nil, mode, nil
	}
	if p["tls.server.keyPassword"] != "" {
		return nil, 0, errors.New("tls.server.keyPassword: encrypted keys are not supported; decrypt the key (openssl pkcs8 -in key -out key.pem) and keep it mode 0600")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	certPath, keyPath := p["tls.server.certPath"], p["tls.server.keyPath"]
	switch {
	case certPath != "" || keyPath != "":
		cert, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, 0, fmt.Errorf("tls.server.certPath/keyPath: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	default:
		test, err := strconv.ParseBool(cmpOr(p["tls.test.mode.enable"], "true"))
		if err != nil || !test {
			return nil, 0, errors.New("TLS needs tls.server.certPath and tls.server.keyPath (or tls.test.mode.enable=true for a self-signed certificate)")
		}
		cert, err := selfSignedCert()
		if err != nil {
			return nil, 0, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch v := cmpOr(p["tls.server.need.client.auth"], "none"); v {
	case "none":
	case "optional", "require":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if v == "require" {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
		pem, err := os.ReadFile(p["tls.server.trustCertPath"])
		if err != nil {
			return nil, 0, fmt.Errorf("tls.server.need.client.auth=%s needs tls.server.trustCertPath: %w", v, err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, 0, fmt.Errorf("tls.server.trustCertPath %s: no PEM certificate", p["tls.server.trustCertPath"])
		}
	default:
		return nil, 0, fmt.Errorf("tls.server.need.client.auth=%q: want none, optional or require", v)
	}
	return cfg, mode, nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// selfSignedCert makes the certificate of tls.test.mode.enable: ECDSA
// P-256, valid a year, for localhost and 127.0.0.1. It proves nothing
// about the server (as Apache's test mode); it only encrypts.
func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "rocketstore self-signed (tls.test.mode.enable)"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
