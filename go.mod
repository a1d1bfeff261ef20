module github.com/agentd-dev/agentd

go 1.27.3

require (
	github.com/aymanbagabas/go-udiff v0.4.1 // indirect
	github.com/bluekeyes/go-gitdiff v0.9.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/creack/pty v1.1.24 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/landlock-lsm/go-landlock v0.11.2 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/sahilm/fuzzy v0.1.3 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/tmaxmax/go-sse v0.12.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.14.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
