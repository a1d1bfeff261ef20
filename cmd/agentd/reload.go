package main

import (
	"context"
	"errors"
	"os"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/transport"
)

// certificate loads --tls-cert and --tls-key (nil when neither is given).
func (f *serveFlags) certificate() (*transport.Certificate, error) {
	switch {
	case f.tlsCert == "" && f.tlsKey == "":
		return nil, nil
	case f.tlsCert == "" || f.tlsKey == "":
		return nil, usageError{errors.New("--tls-cert and --tls-key go together: give both")}
	}
	return transport.LoadCertificate(f.tlsCert, f.tlsKey)
}

// reloadOnHangup serves SIGHUP until ctx ends: config.toml is read again
// for new threads (the same reload a config write does), and the TLS
// certificate for new connections. What fails to load is logged and the
// old one kept; connections and running threads are left alone. The
// service manager is told (RELOADING=1, then READY=1).
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, live *config.Live, cert *transport.Certificate, n *serviceNotifier, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		log.Info("received SIGHUP: reloading the configuration and the TLS certificate")
		n.reloading()
		_ = live.Reload(log, "SIGHUP")
		if cert != nil {
			certFile, keyFile := cert.Files()
			if err := cert.Reload(); err != nil {
				log.Error("could not reload the TLS certificate; new connections keep getting the one in use",
					zap.String("cert", certFile), zap.String("key", keyFile), zap.Error(err))
			} else {
				logCertificate(log, "reloaded the TLS certificate: new connections get it, open ones keep theirs", cert)
			}
		}
		n.reloaded()
	}
}

// logCertificate logs what the certificate in use is, and warns when it
// has expired.
func logCertificate(log *zap.Logger, msg string, cert *transport.Certificate) {
	s := cert.Summary()
	certFile, keyFile := cert.Files()
	fields := []zap.Field{
		zap.String("cert", certFile), zap.String("key", keyFile), zap.String("subject", s.Subject),
		zap.Strings("names", s.Names), zap.Time("notAfter", s.NotAfter), zap.String("sha256", s.SHA256),
	}
	log.Info(msg, fields...)
	if s.Expired {
		log.Warn("the TLS certificate has expired: clients will refuse it", fields...)
	}
}
