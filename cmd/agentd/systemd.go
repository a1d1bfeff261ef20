package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/server/rpc"
)

// activatedSockets takes the listening sockets systemd passed (LISTEN_FDS
// for this process), with their LISTEN_FDNAMES names, and clears those
// variables. A passed descriptor that is not a listening stream socket is
// logged and closed.
func activatedSockets(log *zap.Logger) ([]net.Listener, []string) {
	var lns []net.Listener
	var names []string
	for _, f := range activation.Files(true) {
		ln, err := net.FileListener(f)
		name := f.Name()
		_ = f.Close()
		if err != nil {
			log.Warn("ignoring a passed file descriptor that is not a listening socket", zap.String("name", name), zap.Error(err))
			continue
		}
		lns = append(lns, ln)
		names = append(names, name)
	}
	return lns, names
}

// stuckStatus begins the status line while the engine does not answer
// the watchdog probes.
const stuckStatus = "the engine did not answer"

// statusInterval is how often the status line is refreshed without a
// watchdog.
const statusInterval = 10 * time.Second

// serviceNotifier tells systemd (NOTIFY_SOCKET) how the daemon is: READY=1
// when it serves, STATUS= lines, WATCHDOG=1 at half of WATCHDOG_USEC, each
// only after a request went through the engine and was answered, and
// STOPPING=1 when it shuts down. Without NOTIFY_SOCKET it does nothing.
type serviceNotifier struct {
	srv      *rpc.Server
	log      *zap.Logger
	stopOnce sync.Once
}

func newServiceNotifier(srv *rpc.Server, log *zap.Logger) *serviceNotifier {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	return &serviceNotifier{srv: srv, log: log}
}

func (n *serviceNotifier) send(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Warn("could not notify the service manager", zap.Error(err))
	}
}

// ready reports readiness and runs the status and watchdog loop until ctx
// ends (then reports stopping).
func (n *serviceNotifier) ready(ctx context.Context) {
	if n == nil {
		return
	}
	status := n.srv.Status()
	n.send("READY=1\nSTATUS=" + status)
	watchdog, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		n.log.Warn("WATCHDOG_USEC is not usable; no watchdog pings", zap.Error(err))
	}
	interval := statusInterval
	var prober *rpc.Prober
	if watchdog > 0 {
		interval = watchdog / 2
		if prober, err = n.srv.NewProber(ctx); err != nil {
			n.log.Error("the watchdog probe connection failed; no watchdog pings", zap.Error(err))
		}
	}
	n.log.Info("notifying the service manager", zap.Duration("watchdog", watchdog))
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		if prober != nil {
			defer prober.Close()
		}
		missed := 0
		for {
			select {
			case <-ctx.Done():
				n.stopping()
				return
			case <-t.C:
			}
			var state []string
			if prober != nil {
				pctx, cancel := context.WithTimeout(ctx, interval)
				err := prober.Probe(pctx)
				cancel()
				if err != nil {
					missed++
					n.log.Warn("the engine did not answer the watchdog probe; not pinging", zap.Int("missed", missed), zap.Error(err))
				} else {
					missed = 0
					state = append(state, "WATCHDOG=1")
				}
			}
			s := n.srv.Status()
			if missed > 0 {
				// What `systemctl status` shows until the watchdog fires.
				s = fmt.Sprintf("%s %d watchdog probe(s) in a row; not pinging", stuckStatus, missed)
			}
			if s != status {
				status = s
				state = append(state, "STATUS="+s)
			}
			if len(state) > 0 {
				n.send(strings.Join(state, "\n"))
			}
		}
	}()
}

// reloading reports that a reload (SIGHUP) begins, with the monotonic
// time systemd asks for; reloaded reports that it is done.
func (n *serviceNotifier) reloading() {
	if n == nil {
		return
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		n.send("RELOADING=1")
		return
	}
	n.send(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000))
}

func (n *serviceNotifier) reloaded() {
	if n == nil {
		return
	}
	n.send("READY=1")
}

// stopping reports that the daemon is shutting down (once).
func (n *serviceNotifier) stopping() {
	if n == nil {
		return
	}
	n.stopOnce.Do(func() { n.send("STOPPING=1") })
}
