package test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// testCA is a certificate authority made for one test, which its clients
// trust (and nothing else does).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a server certificate for 127.0.0.1 and localhost, writes
// it and its key (PEM) to certFile and keyFile, each replaced at once
// (a rename, as an operator's tooling does), and returns its SHA-256
// fingerprint.
func (ca *testCA) issue(t *testing.T, cn string, serial int64, certFile, keyFile string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	replaceFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// replaceFile writes data to path through a rename.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// peerCerts records the fingerprint of the certificate each TLS
// connection was given.
type peerCerts struct {
	mu   sync.Mutex
	seen []string
}

func (p *peerCerts) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return ""
	}
	return p.seen[len(p.seen)-1]
}

// dialWSS connects to a wss:// URL as a client that trusts only ca, and
// records the certificate it was given in seen.
func dialWSS(t *testing.T, url string, ca *testCA, seen *peerCerts) *Client {
	t.Helper()
	tc := &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12, VerifyConnection: func(cs tls.ConnectionState) error {
		sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
		seen.mu.Lock()
		seen.seen = append(seen.seen, hex.EncodeToString(sum[:]))
		seen.mu.Unlock()
		return nil
	}}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	return dialWS(t, "wss", url, hc, nil)
}

// A wss:// listener serves the whole protocol to a client that checks its
// certificate; it refuses TLS older than 1.2. SIGHUP reloads the
// certificate: a new connection gets the new one while one made before
// keeps working; a certificate that fails to load leaves the one in use
// (logged, naming the file), and the daemon serves on.
func TestWSSAndCertificateReload(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	first := ca.issue(t, "agentd one", 2, certFile, keyFile)
	d := Start(t, Options{Listen: []string{"wss://127.0.0.1:0"}, Args: []string{"--tls-cert", certFile, "--tls-key", keyFile}})
	url := d.URL("wss")
	if !strings.HasPrefix(url, "wss://127.0.0.1:") {
		t.Fatalf("listener %s", url)
	}
	var seen peerCerts
	old := dialWSS(t, url, ca, &seen)
	if seen.last() != first {
		t.Fatalf("the first connection got certificate %s, want %s", seen.last(), first)
	}
	res := unmarshal(t, WantResult(t, old.Initialize("tls-old", nil)))
	if !strings.HasPrefix(str(res, "userAgent"), "tls-old/") {
		t.Fatalf("initialize over wss: %v", res)
	}
	WantResult(t, old.Call("config/read", map[string]any{}))

	// TLS 1.1 is refused.
	raw, err := net.Dial("tcp", strings.TrimPrefix(url, "wss://"))
	if err != nil {
		t.Fatal(err)
	}
	old11 := tls.Client(raw, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err := old11.Handshake(); err == nil {
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	_ = old11.Close()

	second := ca.issue(t, "agentd two", 3, certFile, keyFile)
	d.Signal(syscall.SIGHUP)
	l := d.WaitLog(LogMsg("reloaded the TLS certificate"))
	if l.Str("sha256") != second || l.Str("subject") != "CN=agentd two" {
		t.Fatalf("reload logged %s", l.Raw)
	}
	fresh := dialWSS(t, url, ca, &seen)
	if seen.last() != second {
		t.Fatalf("a connection after the reload got certificate %s, want %s", seen.last(), second)
	}
	fresh.Initialize("tls-new", nil)
	WantResult(t, old.Call("config/read", map[string]any{}))

	// A broken certificate file: the reload fails, the certificate in
	// use stays, every connection goes on.
	replaceFile(t, certFile, []byte("not a certificate\n"))
	d.Signal(syscall.SIGHUP)
	l = d.WaitLog(LogMsg("could not reload the TLS certificate"))
	if l.Level != "error" || l.Str("cert") != certFile || !strings.Contains(l.Str("error"), certFile) {
		t.Fatalf("failed reload logged %s", l.Raw)
	}
	third := dialWSS(t, url, ca, &seen)
	if seen.last() != second {
		t.Fatalf("after a failed reload a connection got certificate %s, want the one in use %s", seen.last(), second)
	}
	third.Initialize("tls-third", nil)
	WantResult(t, old.Call("config/read", map[string]any{}))
	WantResult(t, fresh.Call("config/read", map[string]any{}))
	if d.Exited() {
		t.Fatal("the daemon exited")
	}
}

// Under socket activation, --tls-cert and --tls-key make the passed TCP
// sockets wss:// listeners.
func TestSocketActivationWithTLS(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	fp := ca.issue(t, "agentd activated", 2, certFile, keyFile)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	f, err := tcp.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Activate: []*os.File{f}, ActivateNames: []string{"web"}, Args: []string{"--tls-cert", certFile, "--tls-key", keyFile}})
	_ = f.Close()
	url := d.URL("wss")
	if url != "wss://"+tcp.Addr().String() {
		t.Fatalf("listener %s, want wss://%s", url, tcp.Addr())
	}
	var seen peerCerts
	c := dialWSS(t, url, ca, &seen)
	if seen.last() != fp {
		t.Fatalf("certificate %s, want %s", seen.last(), fp)
	}
	c.Initialize("activated-tls", nil)
	// Plain WebSocket on it is not served.
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if conn, _, err := websocket.Dial(ctx, "ws://"+tcp.Addr().String(), nil); err == nil {
		_ = conn.CloseNow()
		t.Fatal("plain ws:// was served on a TLS socket")
	}
}

// What TLS needs at startup: a wss:// listener a certificate, a
// certificate a wss:// listener, --tls-cert its --tls-key, a non-loopback
// wss:// listener --ws-auth (as ws://), and the files must load.
func TestTLSStartupChecks(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	ca.issue(t, "agentd", 2, certFile, keyFile)
	bad := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"--listen", "wss://127.0.0.1:0"}, 1, []string{"listen wss://127.0.0.1:0", "needs a certificate", "--tls-cert FILE and --tls-key FILE"}},
		{[]string{"--listen", "ws://127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile}, 1, []string{"no listener serves TLS", "--listen wss://"}},
		{[]string{"--listen", "wss://127.0.0.1:0", "--tls-cert", certFile}, 2, []string{"--tls-cert and --tls-key go together"}},
		{[]string{"--listen", "wss://0.0.0.0:0", "--tls-cert", certFile, "--tls-key", keyFile}, 1, []string{"refusing to start non-loopback websocket listener 0.0.0.0:0 without auth", "--ws-auth"}},
		{[]string{"--listen", "wss://127.0.0.1:0", "--tls-cert", bad, "--tls-key", keyFile}, 1, []string{"loading the TLS certificate " + bad}},
		{[]string{"--listen", "wss://127.0.0.1"}, 1, []string{`invalid listen URL "wss://127.0.0.1"`, "wss://IP:PORT"}},
	} {
		code, _, stderr := run(t, home, append([]string{"app-server"}, tc.args...)...)
		if code != tc.code {
			t.Fatalf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, stderr)
		}
		for _, s := range tc.says {
			if !strings.Contains(stderr, s) {
				t.Fatalf("%v: stderr lacks %q:\n%s", tc.args, s, stderr)
			}
		}
	}
}
