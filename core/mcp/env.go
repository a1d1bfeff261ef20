package mcp

import (
	"net/http"
	"sort"
	"strings"
)

// defaultEnvVars are the variables a stdio server gets from agentd's
// environment without asking (the reference's list): enough to find
// programs and a home, nothing that holds a secret. Everything else must be
// named in env_vars or set in env, so the operator's API keys never reach a
// server by accident.
var defaultEnvVars = []string{
	"HOME", "LOGNAME", "PATH", "SHELL", "USER", "__CF_USER_TEXT_ENCODING",
	"LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
}

// childEnv is the environment of a stdio server, as "K=V" strings: the
// default variables and those of EnvVars that are set in agentd's
// environment, then Env (which wins).
func childEnv(c ServerConfig, getenv func(string) (string, bool)) []string {
	vars := map[string]string{}
	for _, names := range [][]string{defaultEnvVars, c.EnvVars} {
		for _, n := range names {
			if v, ok := getenv(n); ok {
				vars[n] = v
			}
		}
	}
	for k, v := range c.Env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// httpHeaders are the headers sent to a streamable HTTP server: the bearer
// token (from BearerTokenEnvVar), HTTPHeaders, and EnvHTTPHeaders whose
// variables are set and not blank. Invalid names or values are skipped, as
// the reference skips them.
func httpHeaders(c ServerConfig, getenv func(string) (string, bool)) http.Header {
	h := http.Header{}
	set := func(name, value string) {
		if validHeader(name, value) {
			h.Set(name, value)
		}
	}
	for k, v := range c.HTTPHeaders {
		set(k, v)
	}
	for k, env := range c.EnvHTTPHeaders {
		if v, ok := getenv(env); ok && strings.TrimSpace(v) != "" {
			set(k, v)
		}
	}
	if c.BearerTokenEnvVar != "" {
		if v, ok := getenv(c.BearerTokenEnvVar); ok && v != "" {
			h.Set("Authorization", "Bearer "+v)
		}
	}
	return h
}

func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return false
		}
	}
	return !strings.ContainsAny(value, "\r\n\x00")
}
