package transport

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Certificate is the TLS certificate of wss:// listeners, read from a
// certificate file and a key file (PEM). Reload reads them again: new
// handshakes get the new certificate, connections already made keep
// theirs (each handshake asks for the current one, nothing is
// restarted), and a pair that fails to load leaves the one in use.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the certificate (with its chain) and its private
// key.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	cert, err := c.load()
	if err != nil {
		return nil, err
	}
	c.cur.Store(cert)
	return c, nil
}

func (c *Certificate) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate %s with the key %s: %w", c.certFile, c.keyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parsing the TLS certificate %s: %w", c.certFile, err)
		}
	}
	return &cert, nil
}

// Reload reads the files again. On error the certificate in use stays.
func (c *Certificate) Reload() error {
	cert, err := c.load()
	if err != nil {
		return err
	}
	c.cur.Store(cert)
	return nil
}

// Files are the certificate and key files, for logs.
func (c *Certificate) Files() (cert, key string) { return c.certFile, c.keyFile }

// Leaf is the certificate in use (the first of the chain).
func (c *Certificate) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

// Summary describes the certificate in use for logs: subject, names,
// validity, and the SHA-256 fingerprint an operator can compare.
func (c *Certificate) Summary() CertificateSummary {
	leaf := c.Leaf()
	sum := sha256.Sum256(leaf.Raw)
	names := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	return CertificateSummary{
		Subject: leaf.Subject.String(), Names: names, NotAfter: leaf.NotAfter,
		SHA256: hex.EncodeToString(sum[:]), Expired: time.Now().After(leaf.NotAfter),
	}
}

// CertificateSummary is what the logs say of a certificate.
type CertificateSummary struct {
	Subject  string
	Names    []string
	NotAfter time.Time
	SHA256   string
	Expired  bool
}

// serverConfig is the TLS configuration of a wss:// listener: TLS 1.2 at
// least, HTTP/1.1 only (WebSocket upgrades are HTTP/1.1 requests), and
// the certificate in use at each handshake.
func (c *Certificate) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// covers reports whether the certificate in use is valid for host (a
// name or an IP address).
func (c *Certificate) covers(host string) bool {
	return c != nil && c.Leaf().VerifyHostname(host) == nil
}

// errNoCertificate refuses a wss:// listener without a certificate.
var errNoCertificate = errors.New("a wss:// listener needs a certificate: give --tls-cert FILE and --tls-key FILE")
