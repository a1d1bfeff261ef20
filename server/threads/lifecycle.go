package threads

import (
	"context"

	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/server/rpc"

	"github.com/agentd-dev/agentd/protocol"
)

// unload stops a loaded thread (before archive or delete): its subscribers
// see it become notLoaded. It goes on when the client that asked goes
// away, within its own deadline. The caller calls done once the thread's
// file is archived or deleted: until then a load of the same id waits
// (registry.waitUnloaded) rather than reopen the file it is moving.
func (sv *service) unload(ctx context.Context, t *thread) (done func()) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unloadTimeout)
	defer cancel()
	t.mu.Lock()
	done = t.beginUnloadLocked()
	// The session's last events (a turn it aborts) come first; notLoaded
	// is the last status the subscribers see.
	t.shutdown(ctx, projection.Output{Method: "thread/status/changed",
		Params: protocol.ThreadStatusChangedNotification{ThreadID: t.id, Status: protocol.StatusNotLoaded()}})
	return done
}

func (sv *service) threadArchive(ctx context.Context, r *rpc.Request, p *protocol.ThreadIDParams) (*protocol.Empty, error) {
	if _, err := sv.store.Find(p.ThreadID); err != nil {
		t := sv.threads.get(p.ThreadID)
		if t == nil || t.rec == nil || t.rec.Materialized() {
			return nil, storeErr(p.ThreadID, err)
		}
		// A thread before its first turn is archived as the reference
		// does it: its rollout is written now (its session metadata
		// only), then archived.
		if err := t.rec.Persist(ctx); err != nil {
			return nil, storeErr(p.ThreadID, err)
		}
	}
	if t := sv.threads.get(p.ThreadID); t != nil {
		defer sv.unload(ctx, t)()
	}
	if _, err := sv.store.Archive(p.ThreadID); err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	r.ThenBroadcast("thread/archived", protocol.ThreadIDNotification{ThreadID: p.ThreadID})
	return &protocol.Empty{}, nil
}

func (sv *service) threadUnarchive(ctx context.Context, r *rpc.Request, p *protocol.ThreadIDParams) (*protocol.ThreadUnarchiveResponse, error) {
	if _, err := sv.store.Unarchive(p.ThreadID); err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	rt, err := sv.readThread(ctx, p.ThreadID, nil)
	if err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	th := sv.wireThread(p.ThreadID, metaOf(rt), protocol.StatusNotLoaded())
	r.ThenBroadcast("thread/unarchived", protocol.ThreadIDNotification{ThreadID: p.ThreadID})
	return &protocol.ThreadUnarchiveResponse{Thread: th}, nil
}

func (sv *service) threadDelete(ctx context.Context, r *rpc.Request, p *protocol.ThreadIDParams) (*protocol.Empty, error) {
	t := sv.threads.get(p.ThreadID)
	if _, err := sv.store.Find(p.ThreadID); err != nil {
		if t == nil {
			return nil, storeErr(p.ThreadID, err)
		}
		if t.rec == nil {
			return nil, protocol.InvalidRequest("thread is not persisted and cannot be deleted: %s", protocol.Cut(p.ThreadID))
		}
		sv.unload(ctx, t)() // a thread without a file is deleted by unloading it
	} else {
		if t != nil {
			defer sv.unload(ctx, t)()
		}
		if err := sv.store.Delete(p.ThreadID); err != nil {
			return nil, storeErr(p.ThreadID, err)
		}
	}
	r.ThenBroadcast("thread/deleted", protocol.ThreadIDNotification{ThreadID: p.ThreadID})
	return &protocol.Empty{}, nil
}

func (sv *service) threadNameSet(ctx context.Context, r *rpc.Request, p *protocol.ThreadSetNameParams) (*protocol.Empty, error) {
	if t := sv.threads.get(p.ThreadID); t != nil {
		if t.rec != nil {
			if err := t.rec.SetName(ctx, p.Name); err != nil {
				return nil, err
			}
		}
		t.mu.Lock()
		t.meta.name = p.Name
		t.mu.Unlock()
	} else if err := sv.store.SetName(ctx, p.ThreadID, p.Name); err != nil {
		return nil, storeErr(p.ThreadID, err)
	}
	r.ThenBroadcast("thread/name/updated", protocol.ThreadNameUpdatedNotification{ThreadID: p.ThreadID, ThreadName: optString(p.Name)})
	return &protocol.Empty{}, nil
}
