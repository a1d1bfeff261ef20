package threads

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// GaugeRolloutsFailing names the engine gauge that counts the loaded
// threads whose rollout writes fail now (a full disk, a read-only home):
// readiness probes report the daemon not ready while it is above zero.
const GaugeRolloutsFailing = "rollouts failing"

// storageWarnings tells a thread's subscribers when saving its rollout
// starts failing and when it works again, with a warning notification
// each, as the reference tells them of the failure. The rollout writer
// reports on its own goroutine, which must not wait, and possibly while a
// handler holding the thread's lock waits for that writer: so the notices
// are queued here and delivered by a goroutine of their own, in order.
type storageWarnings struct {
	sv *service

	// mu guards the fields that follow.
	mu      sync.Mutex
	queue   []storageNotice
	running bool
}

type storageNotice struct {
	threadID, message string
}

// Texts of the warnings. The first is the reference's, naming agentd.
const (
	transcriptFailingFormat  = "Failed to save the conversation transcript; agentd will continue retrying. Error: %v"
	transcriptRecovered      = "Saving the conversation transcript works again; what was held back has been written."
	transcriptLargeFormat    = "This thread's transcript is %s. One over %s ([server] rollout_max_file_bytes) cannot be read back: past it, the thread could not be resumed once it is unloaded or agentd restarts. Consider going on in a new thread."
	transcriptTooLargeFormat = "This thread's transcript is over %s ([server] rollout_max_file_bytes) and cannot be read back: the thread cannot be resumed once it is unloaded or agentd restarts. Go on in a new thread."
)

// writeFailed is rollout.Options.OnWriteFailed: every failed attempt is
// counted; the first of a series is told to the thread's subscribers.
func (w *storageWarnings) writeFailed(threadID string, err error, first bool) {
	if w.sv.obs != nil {
		w.sv.obs.RolloutWriteFailed()
	}
	if first {
		w.add(storageNotice{threadID, fmt.Sprintf(transcriptFailingFormat, err)})
	}
}

// sizeWarning is rollout.Options.OnSizeWarning: the thread's clients are
// told when its rollout nears, and when it passes, the size past which it
// cannot be read back ([server] rollout_max_file_bytes).
func (w *storageWarnings) sizeWarning(threadID string, size, limit int64, over bool) {
	msg := fmt.Sprintf(transcriptLargeFormat, sizeText(size, math.Floor), sizeText(limit, math.Floor))
	if over {
		msg = fmt.Sprintf(transcriptTooLargeFormat, sizeText(limit, math.Floor))
	}
	w.add(storageNotice{threadID, msg})
}

// sizeText words a size for people: in GiB, MiB or KiB, with a decimal
// when it is not a whole number of them, rounded by round (up for an
// amount that is too much, down for a limit).
func sizeText(n int64, round func(float64) float64) string {
	unit, name := int64(1), "bytes"
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			unit, name = u.size, u.name
			break
		}
	}
	v := strconv.FormatFloat(round(float64(n)/float64(unit)*10)/10, 'f', 1, 64)
	return strings.TrimSuffix(v, ".0") + " " + name
}

// writeRecovered is rollout.Options.OnWriteRecovered.
func (w *storageWarnings) writeRecovered(threadID string) {
	w.add(storageNotice{threadID, transcriptRecovered})
}

func (w *storageWarnings) add(n storageNotice) {
	w.mu.Lock()
	w.queue = append(w.queue, n)
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.deliver()
	}
}

// deliver queues each notice on its thread, if loaded, until none is
// left.
func (w *storageWarnings) deliver() {
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		if len(batch) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, n := range batch {
			t := w.sv.threads.get(n.threadID)
			if t == nil {
				continue
			}
			id := n.threadID
			t.mu.Lock()
			t.queueLocked(projection.Output{Method: "warning", Params: protocol.WarningNotification{ThreadID: &id, Message: n.message}})
			t.mu.Unlock()
		}
	}
}
