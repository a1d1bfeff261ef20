package model_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

func i64(n int64) *int64 { return &n }

// The cases are what the reference (0.169) reported for the same headers.
func TestParseRateLimits(t *testing.T) {
	cases := []struct {
		name    string
		headers map[string]string
		want    model.RateLimitSnapshot
	}{
		{"none", nil, model.RateLimitSnapshot{LimitID: "codex"}},
		{"both windows, name, credits", map[string]string{
			"x-codex-primary-used-percent": "12.5", "x-codex-primary-window-minutes": "300", "x-codex-primary-reset-at": "1704069000",
			"x-codex-secondary-used-percent": "80.6", "x-codex-secondary-window-minutes": "10080", "x-codex-limit-name": " nm ",
			"x-codex-credits-has-credits": "1", "x-codex-credits-unlimited": "TRUE", "x-codex-credits-balance": " 42.5 ",
		}, model.RateLimitSnapshot{
			LimitID: "codex", LimitName: "nm",
			Primary:   &model.RateLimitWindow{UsedPercent: 12.5, WindowMinutes: i64(300), ResetsAt: i64(1704069000)},
			Secondary: &model.RateLimitWindow{UsedPercent: 80.6, WindowMinutes: i64(10080)},
			Credits:   &model.Credits{HasCredits: true, Unlimited: true, Balance: "42.5"},
		}},
		{"zero window is none; credits need both booleans", map[string]string{
			"x-codex-primary-used-percent": "0", "x-codex-primary-window-minutes": "0",
			"x-codex-secondary-used-percent": "13.5", "x-codex-credits-has-credits": "yes", "x-codex-credits-unlimited": "false",
		}, model.RateLimitSnapshot{LimitID: "codex", Secondary: &model.RateLimitWindow{UsedPercent: 13.5}}},
		{"zero with a reset time; bad numbers", map[string]string{
			"x-codex-primary-used-percent": "0", "x-codex-primary-reset-at": "5",
			"x-codex-secondary-used-percent": "abc", "x-codex-secondary-window-minutes": "10",
			"x-codex-credits-has-credits": "False", "x-codex-credits-unlimited": "0", "x-codex-credits-balance": "   ",
		}, model.RateLimitSnapshot{
			LimitID: "codex", Primary: &model.RateLimitWindow{ResetsAt: i64(5)},
			Credits: &model.Credits{},
		}},
		{"exponent, fractional minutes, no infinity or hex", map[string]string{
			"x-codex-primary-used-percent": "1e2", "x-codex-primary-window-minutes": "1.5",
			"x-codex-secondary-used-percent": "inf", "x-other-primary-used-percent": "0x10",
		}, model.RateLimitSnapshot{LimitID: "codex", Primary: &model.RateLimitWindow{UsedPercent: 100}}},
		{"another family is reported instead", map[string]string{
			"x-codex-primary-used-percent": "12.5", "x-codex-other-primary-used-percent": "7", "x-codex-other-limit-name": "Other",
			"x-codex-credits-has-credits": "true", "x-codex-credits-unlimited": "false",
		}, model.RateLimitSnapshot{
			LimitID: "codex_other", LimitName: "Other", Primary: &model.RateLimitWindow{UsedPercent: 7},
			Credits: &model.Credits{HasCredits: true},
		}},
		{"a family without data is skipped", map[string]string{
			"x-codex-primary-used-percent": "12.5", "x-codex-other-primary-used-percent": "0",
		}, model.RateLimitSnapshot{LimitID: "codex", Primary: &model.RateLimitWindow{UsedPercent: 12.5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.headers {
				h.Set(k, v)
			}
			if diff := cmp.Diff(c.want, model.ParseRateLimits(h)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// An HTTP stream reports its response's rate-limit headers.
func TestStreamReportsRateLimits(t *testing.T) {
	srv := mockmodel.New(t)
	srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok")).WithHeader("x-codex-primary-used-percent", "42"))
	st, err := model.NewClient(provider(srv)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, st); err != nil {
		t.Fatal(err)
	}
	if got := st.RateLimits(); got.LimitID != "codex" || got.Primary == nil || got.Primary.UsedPercent != 42 {
		t.Fatalf("rate limits %+v", got)
	}
}

// WithAPIKey's key is asked for each request: a sign-in between two
// requests is used by the second, and no key sends no Authorization.
func TestAPIKeyPerRequest(t *testing.T) {
	srv := mockmodel.New(t)
	for range 3 {
		srv.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "ok")))
	}
	p := provider(srv)
	p.APIKey = "sk-env"
	key := ""
	c := model.NewClient(p, model.WithAPIKey(func() string { return key }))
	for _, k := range []string{"", "sk-one", "sk-two"} {
		key = k
		st, err := c.Stream(context.Background(), request("hi"), meta)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(t, st); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.Header.Get("Authorization"))
	}
	if want := []string{"", "Bearer sk-one", "Bearer sk-two"}; !cmp.Equal(got, want) {
		t.Fatalf("Authorization headers %q, want %q", got, want)
	}
}
