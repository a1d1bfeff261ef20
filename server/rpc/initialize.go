package rpc

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/protocol"
	"go.uber.org/zap"
)

// handleInitialize runs the handshake. It runs on the read loop so that
// the next request is gated by its outcome. Params are decoded once,
// through the protocol table (the reference's error texts); experimental
// gating does not apply, since it would judge the capabilities against
// themselves.
func (c *Conn) handleInitialize(id json.RawMessage, raw json.RawMessage) {
	if c.Initialized() {
		c.sendError(id, protocol.ErrAlreadyInitialized)
		return
	}
	info, _ := protocol.Lookup(protocol.ClientRequest, "initialize")
	v, err := protocol.DecodeParams(info, raw)
	if err != nil {
		c.sendError(id, toInvalidRequest(err))
		return
	}
	p := v.(*protocol.InitializeParams)
	if !validHeaderValue(p.ClientInfo.Name) {
		c.sendError(id, protocol.InvalidRequest("Invalid clientInfo.name: '%s'. Must be a valid HTTP header value.", protocol.Cut(p.ClientInfo.Name)))
		return
	}
	sess := newSession(p, c.srv.opts.Originator)
	// The connection counts as initialized from the moment the result's
	// place is reserved: a broadcast either misses the connection or is
	// queued after the result, never before it.
	r := &Request{conn: c, id: id, method: "initialize"}
	r.ResponseFirst()
	c.sess.Store(sess)
	result, then := c.srv.opts.Initialize(sess.info)
	for _, n := range then {
		if !c.OptedOut(n.m.method) {
			r.then = append(r.then, n.m)
		}
	}
	r.answer(c.resultMsg(id, result), true)
	fields := []zap.Field{zap.String("client", sess.info.Name), zap.String("clientVersion", sess.info.Version),
		zap.Bool("experimentalApi", sess.caps.ExperimentalAPI), zap.String("optOut", protocol.Cut(strings.Join(sess.caps.OptOutNotificationMethods, ",")))}
	if sess.infoCut {
		fields = append(fields, zap.Bool("clientInfoCut", true))
	}
	c.log.Info("client initialized", fields...)
}

// MaxClientInfoBytes bounds each of clientInfo's name, title and version.
// They are identifiers that travel on: the name is every new thread's
// originator (in its session_meta, the rollout's first line, which a
// reader takes only up to 1 MiB) and a header of model requests; all of
// them are in userAgent and the logs. Longer ones are cut, without a
// marker, so that what is kept is the client's own prefix.
const MaxClientInfoBytes = 256

// newSession is what a valid initialize establishes; originator, when
// set, is the client's originator instead of its name.
func newSession(p *protocol.InitializeParams, originator string) *session {
	s := &session{optOut: map[string]struct{}{}}
	var title string
	if p.ClientInfo.Title != nil {
		title = *p.ClientInfo.Title
	}
	s.info = ClientInfo{Name: cutIdentifier(p.ClientInfo.Name), Title: cutIdentifier(title), Version: cutIdentifier(p.ClientInfo.Version)}
	s.info.Originator = s.info.Name
	if originator != "" {
		s.info.Originator = originator
	}
	s.infoCut = s.info.Name != p.ClientInfo.Name || s.info.Title != title || s.info.Version != p.ClientInfo.Version
	if caps := p.Capabilities; caps != nil {
		s.caps.ExperimentalAPI = caps.ExperimentalAPI
		s.caps.OptOutNotificationMethods = caps.OptOutNotificationMethods
		for _, m := range caps.OptOutNotificationMethods {
			s.optOut[m] = struct{}{}
		}
	}
	return s
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

// cutIdentifier returns s's first MaxClientInfoBytes bytes, in whole UTF-8
// characters.
func cutIdentifier(s string) string {
	if len(s) <= MaxClientInfoBytes {
		return s
	}
	k := MaxClientInfoBytes
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k]
}
