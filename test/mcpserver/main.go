// Command mcpserver is a small MCP server for agentd's tests, written with
// the official Go SDK and served over stdio (or, with -http ADDR, over
// streamable HTTP on that address, printing "listening on URL" once bound;
// with -require-bearer TOKEN it refuses requests without that token).
//
// Tools:
//
//	echo   {text}   returns the text; reports one progress step first
//	image  {}       returns a 1×1 PNG and a caption
//	slow   {}       reports progress, then waits until the call is cancelled
//	fail   {}       returns a tool error (isError)
//	env    {name}   returns the value of an environment variable ("<unset>" if unset)
//	write  {path}   annotated as not read-only; writes nothing, says what it would do
//	ask    {question} asks the user (elicitation/create, a form with one
//	                string "answer") and says what came back
//
// Resources: test://greeting (text) and the template test://item/{id}.
// With -big-resource N, also test://big: N bytes of text, "BEGIN" first
// and "END" last.
//
// With -alias NAME, echo is also offered as NAME. With -pidfile FILE it
// writes its pid there; with -child-pidfile FILE it starts "sleep 3600" in
// its own process group (as a wrapper such as npx starts node) and writes
// that pid there, to test that stopping the server ends its group.
//
// With -crash-once FILE, the first tool call made while FILE does not
// exist creates it and exits (status 3) without answering: a server that
// crashes mid-call once and, restarted, works.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onePixelPNG is a valid 1×1 transparent PNG.
var onePixelPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

func main() {
	crashOnce := flag.String("crash-once", "", "crash on the first tool call unless this file exists (then create it)")
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	bearer := flag.String("require-bearer", "", "over HTTP, answer 401 to requests without this bearer token")
	name := flag.String("name", "agentd-test", "the server's name in its initialize answer")
	alias := flag.String("alias", "", "also offer echo under this name (to test how names are qualified)")
	pidFile := flag.String("pidfile", "", "write the server's pid to this file")
	childPidFile := flag.String("child-pidfile", "", "start a long sleep in the server's process group and write its pid here")
	bigResource := flag.Int("big-resource", 0, "also offer test://big, a text of this many bytes")
	flag.Parse()

	if *pidFile != "" {
		writePid(*pidFile, os.Getpid())
	}
	if *childPidFile != "" {
		child := exec.Command("sleep", "3600")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver:", err)
			os.Exit(1)
		}
		writePid(*childPidFile, child.Process.Pid)
	}

	start := func() {
		if *crashOnce == "" {
			return
		}
		if f, err := os.OpenFile(*crashOnce, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			_ = f.Close()
			fmt.Fprintln(os.Stderr, "mcpserver: crashing on purpose")
			os.Exit(3)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: *name, Version: "1.0.0"}, nil)
	addTools(srv, start, *alias)
	if *bigResource > 0 {
		addBigResource(srv, *bigResource)
	}

	if *httpAddr != "" {
		serveHTTP(srv, *httpAddr, *bearer)
		return
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

// addBigResource offers test://big, a text of n bytes (at least 8).
func addBigResource(srv *mcp.Server, n int) {
	text := "BEGIN" + strings.Repeat(".", max(n-8, 0)) + "END"
	srv.AddResource(&mcp.Resource{URI: "test://big", Name: "big", Description: "A long text.", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
}

// writePid writes a pid atomically (a reader never sees half of it).
func writePid(path string, pid int) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)), 0o600); err != nil || os.Rename(tmp, path) != nil {
		fmt.Fprintln(os.Stderr, "mcpserver: cannot write", path)
		os.Exit(1)
	}
}

func serveHTTP(srv *mcp.Server, addr, bearer string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s/mcp\n", l.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer != "" && r.Header.Get("Authorization") != "Bearer "+bearer {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func args(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

// progress reports one step of the call, if the client asked for progress,
// then pings the client: the client handles notifications in order, before
// the ping, so once the ping is answered the client has seen the progress
// (and the answer cannot overtake it).
func progress(ctx context.Context, req *mcp.CallToolRequest, step float64, msg string) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return
	}
	_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: step, Message: msg})
	_ = req.Session.Ping(ctx, nil)
}

func addTools(srv *mcp.Server, start func(), alias string) {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	echo := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start()
		progress(ctx, req, 1, "echoing")
		t, _ := args(req)["text"].(string)
		return text(t), nil
	}
	echoSchema := schema(`"text":{"type":"string","description":"What to echo."}`, "text")
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: readOnly, InputSchema: echoSchema}, echo)
	if alias != "" {
		srv.AddTool(&mcp.Tool{Name: alias, Description: "Echo the text back.", Annotations: readOnly, InputSchema: echoSchema}, echo)
	}
	srv.AddTool(&mcp.Tool{Name: "image", Description: "Return a tiny image.", Annotations: readOnly, InputSchema: schema(``)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start()
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a red dot"},
				&mcp.ImageContent{Data: onePixelPNG, MIMEType: "image/png"},
			}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "slow", Description: "Report progress, then wait until cancelled.", Annotations: readOnly, InputSchema: schema(``)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start()
			progress(ctx, req, 1, "started")
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "mcpserver: slow call cancelled")
			return nil, ctx.Err()
		})
	srv.AddTool(&mcp.Tool{Name: "fail", Description: "Always fail.", Annotations: readOnly, InputSchema: schema(``)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start()
			r := text("the tool failed on purpose")
			r.IsError = true
			return r, nil
		})
	srv.AddTool(&mcp.Tool{Name: "env", Description: "Read an environment variable.", Annotations: readOnly,
		InputSchema: schema(`"name":{"type":"string"}`, "name")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start()
			n, _ := args(req)["name"].(string)
			v, ok := os.LookupEnv(n)
			if !ok {
				return text("<unset>"), nil
			}
			return text(v), nil
		})
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Ask the user a question.", Annotations: readOnly,
		InputSchema: schema(`"question":{"type":"string"}`, "question")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start()
			q, _ := args(req)["question"].(string)
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: q,
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)})
			if err != nil {
				return nil, err
			}
			if res.Action != "accept" {
				return text(res.Action), nil
			}
			return text(fmt.Sprintf("accepted: %v", res.Content["answer"])), nil
		})
	srv.AddResource(&mcp.Resource{URI: "test://greeting", Name: "greeting", Description: "A greeting.", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello from a resource"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://item/{id}", Name: "item", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + strings.TrimPrefix(req.Params.URI, "test://item/")}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "write", Description: "Pretend to write a file.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false},
		InputSchema: schema(`"path":{"type":"string"}`, "path")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start()
			p, _ := args(req)["path"].(string)
			return text("would write " + strings.TrimSpace(p)), nil
		})
}
