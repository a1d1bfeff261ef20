package threads

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
	"go.uber.org/zap"
)

// turnNotice is the JSON argument the notify program gets after a
// completed turn, in the reference's shape.
type turnNotice struct {
	Type                 string   `json:"type"`
	ThreadID             string   `json:"thread-id"`
	TurnID               string   `json:"turn-id"`
	Cwd                  string   `json:"cwd"`
	Client               string   `json:"client,omitempty"`
	InputMessages        []string `json:"input-messages"`
	LastAssistantMessage *string  `json:"last-assistant-message"`
}

// noticeTurn keeps what a turn's notice needs as the turn's events pass;
// at the end of a completed turn it starts the notify program. t.mu must
// be held.
func (t *thread) noticeTurn(ev core.Event) {
	if len(t.cfg.Notify) == 0 {
		return
	}
	switch m := ev.Msg.(type) {
	case core.TurnStarted:
		t.turnInputs = nil
		// Only the model's turns are told about, as the reference does:
		// not compactions, not the user's shell commands.
		t.turnNotify = m.Kind == core.TurnRegular
	case core.ItemCompleted:
		if um, ok := m.Item.(core.UserMessageItem); ok {
			var parts []string
			for _, u := range um.Content {
				if u.Kind == core.InputText && u.Text != "" {
					parts = append(parts, u.Text)
				}
			}
			t.turnInputs = append(t.turnInputs, strings.Join(parts, "\n"))
		}
	case core.TurnComplete:
		if m.Error != nil || !t.turnNotify {
			return
		}
		n := turnNotice{
			Type: "agent-turn-complete", ThreadID: t.id, TurnID: ev.TurnID, Cwd: t.meta.cwd,
			Client: t.turnClient, InputMessages: t.turnInputs,
		}
		if n.InputMessages == nil {
			n.InputMessages = []string{}
		}
		if m.LastAgentMessage != "" {
			msg := m.LastAgentMessage
			n.LastAssistantMessage = &msg
		}
		t.turnInputs = nil
		go runNotify(t.cfg.Notify, t.cfg.ChildEnv(os.Environ(), nil), n, t.log.With(zap.String("turn", ev.TurnID)))
	}
}

// notifyTimeout bounds a notify program's run: it is killed after that.
const notifyTimeout = time.Minute

// runNotify runs the notify program with the notice as its last argument,
// outside any sandbox, in env (the daemon's environment less its
// credentials and the service manager's variables, see
// config.Config.ChildEnv), and reaps it; after notifyTimeout it is killed.
// Its output is discarded; a failure is logged.
func runNotify(argv, env []string, n turnNotice, log *zap.Logger) {
	arg, err := json.Marshal(n)
	if err != nil {
		log.Error("notify: encode the notice", zap.Error(err))
		return
	}
	args := append(append([]string{}, argv[1:]...), string(arg))
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, argv[0], args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		log.Warn("notify: the program could not be started", zap.String("program", argv[0]), zap.Error(err))
		return
	}
	if err := cmd.Wait(); err != nil {
		log.Warn("notify: the program failed", zap.String("program", argv[0]), zap.Error(err))
	}
}
