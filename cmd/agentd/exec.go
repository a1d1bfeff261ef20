package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/cmd/agentd/execcli"
	"github.com/agentd-dev/agentd/server"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/inprocess"
	"github.com/agentd-dev/agentd/server/transport"
)

// execFlags are agentd exec's flags: codex exec's (those the Codex SDK
// passes among them), and agentd's --remote.
type execFlags struct {
	json              bool
	experimentalJSON  bool
	model             string
	sandbox           string
	cd                string
	skipGitRepoCheck  bool
	outputSchema      string
	outputLastMessage string
	images            []string
	ephemeral         bool
	fullAuto          bool
	yolo              bool
	// Accepted for the SDK and the reference's scripts, without effect
	// (docs/compatibility.md says why).
	addDirs            []string
	threadSource       string
	cyberAccessProgram string
	color              string
	// remote runs against a daemon instead of in process.
	remote         string
	remoteTokenEnv string
	// resume's own.
	last, all bool
}

func newExecCmd(g *globalFlags) *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:     "exec [PROMPT|-]",
		Aliases: []string{"e"}, // as codex exec
		Short:   "Run the agent non-interactively (codex exec)",
		Long: `Run one turn without a user: the prompt is the argument, or standard input when
it is absent or "-" (with both, standard input is added to the prompt in a
<stdin> block). Progress goes to stderr and the final message to stdout;
--json (or --experimental-json) prints codex exec's JSONL event stream on
stdout instead. Approvals are never asked for: choose what the agent may do
with --sandbox. The exit status is 0 when the turn completed, 1 otherwise.

The agent runs in this process, or in a running daemon with --remote
ws://HOST:PORT or unix://[PATH].`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, g, f, "", args)
		},
	}
	pf := cmd.PersistentFlags()
	pf.BoolVar(&f.json, "json", false, "print the events as JSONL on stdout (codex exec --json)")
	pf.BoolVar(&f.experimentalJSON, "experimental-json", false, "the same as --json (the Codex SDK's name)")
	pf.StringVarP(&f.model, "model", "m", "", "the model to use")
	pf.StringVarP(&f.sandbox, "sandbox", "s", "", "sandbox of the model's commands: read-only, workspace-write or danger-full-access")
	pf.StringVarP(&f.cd, "cd", "C", "", "the agent's working directory (default: this one)")
	pf.BoolVar(&f.skipGitRepoCheck, "skip-git-repo-check", false, "allow a working directory outside a git repository or trusted project")
	pf.StringVar(&f.outputSchema, "output-schema", "", "a JSON Schema file the final message must follow")
	pf.StringVarP(&f.outputLastMessage, "output-last-message", "o", "", "write the final message to this file")
	pf.StringSliceVarP(&f.images, "image", "i", nil, "attach an image file to the prompt (repeatable, or comma-separated)")
	pf.BoolVar(&f.ephemeral, "ephemeral", false, "do not record the thread")
	pf.BoolVar(&f.fullAuto, "full-auto", false, "the workspace-write sandbox")
	pf.BoolVar(&f.yolo, "dangerously-bypass-approvals-and-sandbox", false, "no sandbox at all (danger-full-access); for environments sandboxed from outside")
	pf.StringArrayVar(&f.addDirs, "add-dir", nil, "accepted, without effect: agentd has no extra writable directories per run")
	pf.StringVar(&f.threadSource, "thread-source", "", "accepted, without effect")
	pf.StringVar(&f.cyberAccessProgram, "cyber-access-program", "", "accepted, without effect")
	pf.StringVar(&f.color, "color", "auto", "accepted: agentd's transcript has no colour")
	pf.StringVar(&f.remote, "remote", "", "run in the daemon at ws://HOST:PORT, wss://HOST:PORT or unix://[PATH] instead of in process")
	pf.StringVar(&f.remoteTokenEnv, "remote-auth-token-env", "", "the variable holding the daemon's bearer token (with --remote)")

	resume := &cobra.Command{
		Use:   "resume [SESSION_ID] [PROMPT|-]",
		Short: "Run one more turn of a recorded thread, by id or the latest with --last",
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if !f.last {
				if len(args) == 0 {
					return usageError{errors.New("resume needs a SESSION_ID, or --last")}
				}
				id, args = args[0], args[1:]
			}
			if len(args) > 1 {
				return usageError{fmt.Errorf("unexpected argument %q", args[1])}
			}
			return runExec(cmd, g, f, id, args)
		},
	}
	resume.Flags().BoolVar(&f.last, "last", false, "resume the most recently updated thread (in the working directory unless --all)")
	resume.Flags().BoolVar(&f.all, "all", false, "with --last, look in every directory")
	cmd.AddCommand(resume)
	// codex exec's other subcommands: refused by name, never taken as a
	// prompt.
	for _, name := range []string{"fork", "review"} {
		cmd.AddCommand(&cobra.Command{
			Use: name, Hidden: true, DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return usageError{fmt.Errorf("%q is not supported by agentd exec", cmd.CommandPath())}
			},
		})
	}
	return cmd
}

// runExec resolves the command line into an execcli.Spec, connects, and
// runs the turn. resumeID is resume's SESSION_ID.
func runExec(cmd *cobra.Command, g *globalFlags, f *execFlags, resumeID string, args []string) error {
	opts, err := g.configOptions()
	if err != nil {
		return err
	}
	// codex exec takes CODEX_API_KEY as the OpenAI key (the SDK's apiKey
	// option sets it); the variable the provider reads wins.
	if key := os.Getenv("CODEX_API_KEY"); key != "" && os.Getenv("OPENAI_API_KEY") == "" {
		_ = os.Setenv("OPENAI_API_KEY", key)
	}
	spec, err := f.spec(resumeID)
	if err != nil {
		return err
	}
	cfg, err := config.Load(opts)
	if err != nil {
		return err
	}
	if !f.skipGitRepoCheck && !trustedDir(cfg, spec.Cwd) {
		fmt.Fprintln(os.Stderr, "Not inside a trusted directory and --skip-git-repo-check was not specified.")
		return exitCode(1)
	}
	var arg *string
	if len(args) == 1 {
		arg = &args[0]
	}
	if spec.Prompt, err = readPrompt(arg, os.Stdin, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitCode(1)
	}
	level := "error"
	if cmd.Flags().Changed("log-level") {
		level = g.logLevel
	}
	log, err := newLogger(level, g.logFormat)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	// The first SIGINT or SIGTERM interrupts the turn (Run waits for its
	// end); after it the signals kill as usual, so a second one exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	conn, err := f.connect(ctx, cfg, opts, log)
	if err != nil {
		return err
	}
	defer conn.Close()
	if f.remote != "" {
		spec.Config = remoteConfig(opts.Overrides)
	}
	err = execcli.Run(ctx, conn, spec, os.Stdout, os.Stderr)
	if errors.Is(err, execcli.ErrTurnFailed) {
		return exitCode(1)
	}
	return err
}

// spec is the run the flags ask for, less the prompt.
func (f *execFlags) spec(resumeID string) (execcli.Spec, error) {
	s := execcli.Spec{
		JSON: f.json || f.experimentalJSON, Model: f.model, Sandbox: f.sandbox,
		LastMessageFile: f.outputLastMessage, Ephemeral: f.ephemeral,
		ResumeID: resumeID, ResumeLast: f.last, ResumeAll: f.all,
		// codex exec never asks: there is no one to answer.
		Approval: "never",
		Version:  server.Version,
	}
	switch s.Sandbox {
	case "", "read-only", "workspace-write", "danger-full-access":
	default:
		return s, usageError{fmt.Errorf("invalid value %q for --sandbox: one of read-only, workspace-write, danger-full-access", s.Sandbox)}
	}
	if f.fullAuto && s.Sandbox == "" {
		s.Sandbox = "workspace-write"
	}
	if f.yolo {
		s.Sandbox = "danger-full-access"
	}
	wd, err := os.Getwd()
	if err != nil {
		return s, err
	}
	if s.Cwd, err = config.ResolveDir(f.cd, wd); err != nil {
		return s, fmt.Errorf("--cd: %v", err)
	}
	for _, img := range f.images {
		if !filepath.IsAbs(img) {
			img = filepath.Join(wd, img)
		}
		s.Images = append(s.Images, img)
	}
	if f.outputSchema != "" {
		b, err := os.ReadFile(f.outputSchema)
		if err != nil {
			return s, fmt.Errorf("reading the output schema: %w", err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			return s, fmt.Errorf("the output schema %s is not a JSON object: %v", f.outputSchema, err)
		}
		s.OutputSchema = b
	}
	return s, nil
}

// connect starts the agent in process, or connects to the daemon of
// --remote.
func (f *execFlags) connect(ctx context.Context, cfg *config.Config, opts config.Options, log *zap.Logger) (*inprocess.Client, error) {
	name := os.Getenv(server.OriginatorEnv)
	if name == "" {
		name = "codex_exec"
	}
	o := inprocess.Options{ClientInfo: inprocess.ClientInfo{Name: name, Title: "agentd exec", Version: server.Version}}
	if f.remote == "" {
		if err := os.MkdirAll(opts.Home, 0o700); err != nil {
			return nil, fmt.Errorf("creating home directory: %w", err)
		}
		return inprocess.Start(ctx, cfg, log, o)
	}
	url := f.remote
	if url == "unix://" {
		url += transport.DefaultUnixSocket(opts.Home)
	}
	do := inprocess.DialOptions{Options: o, Log: log}
	if f.remoteTokenEnv != "" {
		do.Token = os.Getenv(f.remoteTokenEnv)
		if do.Token == "" {
			return nil, fmt.Errorf("--remote-auth-token-env: %s is not set", f.remoteTokenEnv)
		}
	}
	return inprocess.Dial(ctx, url, do)
}

// remoteConfig turns -c key=value overrides into thread/start's config
// (dotted keys, values as TOML reads them), for a daemon that has its
// own configuration.
func remoteConfig(overrides []string) map[string]any {
	out := map[string]any{}
	for _, kv := range overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = config.ParseOverrideValue(v)
	}
	return out
}

// trustedDir says whether cwd is inside a git repository or a project
// config.toml trusts: where codex exec agrees to run without
// --skip-git-repo-check.
func trustedDir(cfg *config.Config, cwd string) bool {
	if cfg.ProjectTrust(cwd) == config.TrustTrusted {
		return true
	}
	for dir := cwd; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		if filepath.Dir(dir) == dir {
			return false
		}
	}
}

// readPrompt is the prompt: the argument, standard input when it is
// absent or "-", or the argument with standard input added in a <stdin>
// block when input is piped too. Messages say where it is read from, as
// codex exec says it.
func readPrompt(arg *string, stdin *os.File, stderr io.Writer) (string, error) {
	piped := !isTerminal(stdin)
	switch {
	case arg != nil && *arg != "-":
		if !piped {
			return *arg, nil
		}
		fmt.Fprintln(stderr, "Reading additional input from stdin...")
		extra, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("reading standard input: %v", err)
		}
		if strings.TrimSpace(string(extra)) == "" {
			return *arg, nil
		}
		block := string(extra)
		if !strings.HasSuffix(block, "\n") {
			block += "\n"
		}
		return *arg + "\n\n<stdin>\n" + block + "</stdin>", nil
	case arg == nil && !piped:
		//lint:ignore ST1005 the reference's text
		return "", errors.New("No prompt provided. Either specify one as an argument or pipe the prompt into stdin.")
	}
	if arg == nil {
		fmt.Fprintln(stderr, "Reading prompt from stdin...")
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return "", fmt.Errorf("reading standard input: %v", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		//lint:ignore ST1005 the reference's text
		return "", errors.New("No prompt provided via stdin.")
	}
	return string(b), nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
