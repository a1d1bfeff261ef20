package model_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// A server that echoes the request's headers in its error bodies (HTTP 400,
// 401, 502) or names a credential in a response.failed event never gets a
// credential into the error the client returns: the API key, a sensitive
// http_headers value, an env_http_headers value and a sensitive query
// parameter are all cut out, and the request did carry each of them.
func TestErrorsNeverCarryCredentials(t *testing.T) {
	const (
		key      = "sk-unit-provider-key-0123456789"
		hdr      = "unit-header-token-abcdef"
		envHdr   = "unit-env-header-value-42"
		queryKey = "unit-query-key-31415"
	)
	secrets := []string{key, hdr, envHdr, queryKey}
	p := func(srv *mockmodel.Server) model.Provider {
		p := provider(srv)
		p.APIKey = key
		p.HTTPHeaders = map[string]string{"X-Api-Token": hdr, "X-From-Env": envHdr, "X-Team": "core-team"}
		p.EnvHTTPHeaders = map[string]string{"X-From-Env": "SOME_VARIABLE"}
		p.QueryParams = map[string]string{"api-key": queryKey}
		return p
	}
	for _, tc := range []struct {
		name string
		resp mockmodel.Response
		from string
	}{
		{"400", mockmodel.Status(http.StatusBadRequest, "").EchoHeaders(), fromStream},
		{"401", mockmodel.Status(http.StatusUnauthorized, "").EchoHeaders(), fromStream},
		{"502", mockmodel.Status(http.StatusBadGateway, "").EchoHeaders(), fromStream},
		{"failed event", mockmodel.SSE(mockmodel.Created("resp_1"), mockmodel.Failed("resp_1", "server_error",
			"upstream saw Authorization: Bearer "+key+" and "+hdr+" at /v1/responses?api-key="+queryKey)), fromNext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mockmodel.New(t)
			srv.Enqueue(tc.resp)
			st, err := model.NewClient(p(srv)).Stream(context.Background(), request("hi"), meta)
			if tc.from == fromNext {
				if err != nil {
					t.Fatal(err)
				}
				_, err = drain(t, st)
			}
			if err == nil {
				t.Fatal("no error")
			}
			r := srv.Requests()[0]
			if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("X-Api-Token") != hdr ||
				r.Header.Get("X-From-Env") != envHdr || r.Query.Get("api-key") != queryKey {
				t.Fatalf("the request did not carry the credentials: %v %v", r.Header, r.Query)
			}
			me := modelError(t, err)
			for _, text := range []string{err.Error(), me.Message} {
				for _, s := range secrets {
					if strings.Contains(text, s) {
						t.Fatalf("the error carries %q: %s", s, text)
					}
				}
				if !strings.Contains(text, model.Redacted) {
					t.Fatalf("nothing was redacted in %s", text)
				}
			}
			if tc.from == fromStream && !strings.Contains(me.Message, "X-Team: core-team") {
				t.Fatalf("a harmless header was cut too: %s", me.Message)
			}
		})
	}
}

func TestRedactPatterns(t *testing.T) {
	for in, want := range map[string]string{
		"authorization: Bearer abc.def-ghi_jkl": "authorization: Bearer " + model.Redacted,
		"key sk-proj-ABCDEFGHIJKLmnop rejected": "key " + model.Redacted + " rejected",
		"the known secret-value-1 here":         "the known " + model.Redacted + " here",
		"task-1234567890123 and bearer x":       "task-1234567890123 and bearer x",
	} {
		if got := model.Redact(in, []string{"secret-value-1"}); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecrets(t *testing.T) {
	p := model.Provider{
		APIKey:         "the-api-key",
		HTTPHeaders:    map[string]string{"Authorization": "Bearer header-token", "X-Team": "core-team", "X-Env": "from-env-1", "X-Short-Key": "abc"},
		EnvHTTPHeaders: map[string]string{"X-Env": "VAR"},
		QueryParams:    map[string]string{"api-version": "2025-01-01", "sig": "x", "client_secret": "query-secret"},
	}
	got := p.Secrets("signed-in-key")
	for _, want := range []string{"the-api-key", "signed-in-key", "Bearer header-token", "header-token", "from-env-1", "query-secret"} {
		if !strings.Contains(strings.Join(got, "\n")+"\n", want+"\n") {
			t.Errorf("Secrets() = %q, want %q among them", got, want)
		}
	}
	for _, not := range []string{"core-team", "2025-01-01", "abc"} {
		for _, s := range got {
			if s == not {
				t.Errorf("Secrets() = %q includes %q", got, not)
			}
		}
	}
}
