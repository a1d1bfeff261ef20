package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
)

// selfSigned writes a self-signed certificate for names (and 127.0.0.1)
// and its key into dir, and returns the files and the certificate.
func selfSigned(t *testing.T, dir, cn string, names ...string) (string, string, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: names, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile, keyFile := filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func TestParseWSS(t *testing.T) {
	ep, err := ParseListenURL("wss://127.0.0.1:0", "")
	if err != nil || ep.Kind != KindWS || !ep.TLS || ep.Addr != "127.0.0.1:0" {
		t.Fatalf("%+v %v", ep, err)
	}
	if ep, _ := ParseListenURL("ws://127.0.0.1:0", ""); ep.TLS {
		t.Fatal("ws:// parsed as TLS")
	}
	if _, err := ParseListenURL("wss://127.0.0.1", ""); err == nil || !strings.Contains(err.Error(), "missing port") {
		t.Fatalf("wss without port: %v", err)
	}
	if _, err := Listen(context.Background(), ep, Options{}); err == nil || !strings.Contains(err.Error(), "--tls-cert FILE and --tls-key FILE") {
		t.Fatalf("wss without a certificate: %v", err)
	}
}

// Reload replaces the certificate; a pair that does not load (a key that
// is not the certificate's, a missing file) leaves it.
func TestCertificateReloadKeepsTheOldOnFailure(t *testing.T) {
	dir := t.TempDir()
	certA, keyA, a := selfSigned(t, dir, "a")
	c, err := LoadCertificate(certA, keyA)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Leaf().Equal(a) {
		t.Fatal("not the loaded certificate")
	}
	certB, keyB, b := selfSigned(t, dir, "b")
	// A mismatched pair: a's certificate with b's key.
	if err := os.Rename(keyB, keyA); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err == nil || !strings.Contains(err.Error(), certA) {
		t.Fatalf("a mismatched pair reloaded: %v", err)
	}
	if !c.Leaf().Equal(a) {
		t.Fatal("a failed reload changed the certificate")
	}
	if err := os.Rename(certB, certA); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if !c.Leaf().Equal(b) || c.Summary().Subject != "CN=b" || c.Summary().Expired {
		t.Fatalf("after the reload: %+v", c.Summary())
	}
	if _, err := LoadCertificate(filepath.Join(dir, "none.crt"), keyA); err == nil {
		t.Fatal("a missing file loaded")
	}
}

// Over TLS, a Host the certificate is valid for passes the DNS-rebinding
// check (clients dial names); any other name is still refused.
func TestWSSHostCheckTrustsTheCertificateNames(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t, t.TempDir(), "agentd", "agentd.example")
	c, err := LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := ParseListenURL("wss://127.0.0.1:0", "")
	// The HTTP server logs the handshakes its Close cut short after the
	// test has ended: a logger tied to the test would panic.
	l, err := Listen(context.Background(), ep, Options{Logger: zap.NewNop(), TLS: c})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Serve(echo) }()
	t.Cleanup(func() { _ = l.Close() })
	addr := strings.TrimPrefix(l.URL(), "wss://")
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	dial := func(host string) (int, error) {
		hc := &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			},
		}}
		conn, resp, err := websocket.Dial(context.Background(), "wss://"+host+"/", &websocket.DialOptions{HTTPClient: hc})
		if err != nil {
			if resp != nil {
				return resp.StatusCode, err
			}
			return 0, err
		}
		_ = conn.CloseNow()
		return resp.StatusCode, nil
	}
	if code, err := dial("agentd.example"); err != nil || code != http.StatusSwitchingProtocols {
		t.Fatalf("a name of the certificate: %d %v", code, err)
	}
	if code, err := dial("127.0.0.1"); err != nil || code != http.StatusSwitchingProtocols {
		t.Fatalf("the address: %d %v", code, err)
	}
	// A rebound name the client was fooled into trusting (ServerName
	// differs from Host): refused.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "agentd.example"}}}
	_, resp, err := websocket.Dial(context.Background(), "wss://"+addr+"/", &websocket.DialOptions{HTTPClient: hc, Host: "attacker.example"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign Host over TLS: %v %v", err, resp)
	}
	// TLS 1.1 is refused.
	raw, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11, ServerName: "agentd.example"})
	if err == nil {
		_ = raw.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}
