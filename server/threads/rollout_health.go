package threads

import (
	"fmt"
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
	transcriptFailingFormat = "Failed to save the conversation transcript; agentd will continue retrying. Error: %v"
	transcriptRecovered     = "Saving the conversation transcript works again; what was held back has been written."
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
