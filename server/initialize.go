package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/agentd-dev/agentd/protocol"
	"go.uber.org/zap"
)

// initializeParams is the part of initialize's params the connection
// needs. Full validation goes through protocol.DecodeParams when the
// protocol table describes initialize.
type initializeParams struct {
	ClientInfo *struct {
		Name    *string `json:"name"`
		Title   *string `json:"title"`
		Version *string `json:"version"`
	} `json:"clientInfo"`
	Capabilities *struct {
		ExperimentalAPI           bool     `json:"experimentalApi"`
		OptOutNotificationMethods []string `json:"optOutNotificationMethods"`
	} `json:"capabilities"`
}

// initializeResult is initialize's result.
type initializeResult struct {
	UserAgent      string `json:"userAgent"`
	CodexHome      string `json:"codexHome"`
	PlatformFamily string `json:"platformFamily"`
	PlatformOs     string `json:"platformOs"`
}

// configWarningParams is the configWarning notification's params.
type configWarningParams struct {
	Summary string  `json:"summary"`
	Details *string `json:"details"`
}

// handleInitialize runs the handshake. It runs on the read loop so that
// the next request is gated by its outcome.
func (c *Conn) handleInitialize(id json.RawMessage, raw json.RawMessage) {
	if c.Initialized() {
		c.sendError(id, protocol.ErrAlreadyInitialized)
		return
	}
	if info, ok := protocol.Lookup(protocol.ClientRequest, "initialize"); ok {
		// Decoding only: experimental gating would judge the
		// capabilities against themselves.
		if _, err := protocol.DecodeParams(info, raw); err != nil {
			c.sendError(id, toInvalidRequest(err))
			return
		}
	}
	sess, perr := parseInitialize(raw)
	if perr != nil {
		c.sendError(id, perr)
		return
	}
	res := initializeResult{
		UserAgent:      userAgent(sess.info),
		CodexHome:      c.srv.cfg.Home,
		PlatformFamily: platformFamily(),
		PlatformOs:     platformOS(),
	}
	// Initialized once the result is queued, so that a broadcast never
	// reaches the client before its initialize result; the outbox holds
	// the result until then, so no broadcast in between can miss a
	// client that already has it.
	c.out.hold()
	if !c.sendResult(id, res) {
		c.out.unhold()
		return
	}
	c.sess.Store(sess)
	c.out.unhold()
	c.log.Info("client initialized",
		zap.String("client", sess.info.Name), zap.String("clientVersion", sess.info.Version),
		zap.Bool("experimentalApi", sess.caps.ExperimentalAPI), zap.Strings("optOut", sess.caps.OptOutNotificationMethods))
	for _, w := range c.srv.cfg.Warnings {
		p := configWarningParams{Summary: w.Summary}
		if w.Details != "" {
			d := w.Details
			p.Details = &d
		}
		c.Notify("configWarning", p)
	}
}

func parseInitialize(raw json.RawMessage) (*session, *protocol.Error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, protocol.InvalidRequest("Invalid request: missing field `params`")
	}
	var p initializeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, protocol.InvalidRequest("Invalid request: invalid type: %s, expected %s for `%s`", te.Value, te.Type, te.Field)
		}
		return nil, protocol.InvalidRequest("Invalid request: %v", err)
	}
	ci := p.ClientInfo
	switch {
	case ci == nil:
		return nil, protocol.InvalidRequest("Invalid request: missing field `clientInfo`")
	case ci.Name == nil:
		return nil, protocol.InvalidRequest("Invalid request: missing field `name`")
	case ci.Version == nil:
		return nil, protocol.InvalidRequest("Invalid request: missing field `version`")
	}
	if !validHeaderValue(*ci.Name) {
		return nil, protocol.InvalidRequest("Invalid clientInfo.name: '%s'. Must be a valid HTTP header value.", *ci.Name)
	}
	s := &session{info: ClientInfo{Name: *ci.Name, Version: *ci.Version}, optOut: map[string]struct{}{}}
	if ci.Title != nil {
		s.info.Title = *ci.Title
	}
	if caps := p.Capabilities; caps != nil {
		s.caps.ExperimentalAPI = caps.ExperimentalAPI
		s.caps.OptOutNotificationMethods = caps.OptOutNotificationMethods
		for _, m := range caps.OptOutNotificationMethods {
			s.optOut[m] = struct{}{}
		}
	}
	return s, nil
}

// validHeaderValue reports whether s may be an HTTP header value (the
// client name becomes the originator header of model requests): no
// control characters other than tab, no DEL.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// userAgent is "<client>/<our version> (<os>; <arch>) (<client>; <client version>)".
func userAgent(ci ClientInfo) string {
	return fmt.Sprintf("%s/%s (%s; %s) (%s; %s)", ci.Name, Version, runtime.GOOS, archName(), ci.Name, ci.Version)
}

func archName() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return runtime.GOARCH
}

func platformFamily() string {
	if runtime.GOOS == "windows" {
		return "windows"
	}
	return "unix"
}

func platformOS() string {
	if runtime.GOOS == "darwin" {
		return "macos"
	}
	return runtime.GOOS
}
