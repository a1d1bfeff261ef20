package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/server/config"
)

// The kernel keeps a copy of the environment a process was started with
// (/proc/<pid>/environ), which os.Unsetenv does not touch: anything that
// can read the daemon's /proc entry — fs/readFile of /proc/self/environ, a
// command reading /proc/$PPID/environ — would find the operator's API keys
// there. So when a secret variable is in that block, the daemon
// re-executes itself (same pid, same argv, same descriptors) with an
// environment without them, and hands their values over through an
// inherited pipe whose number is in config.SecretsFDVariable. The new
// process reads them into Go's copy of the environment only.

// selfExe is the program the daemon re-executes: the running binary even
// if its file was replaced or removed since. (A variable for the test of
// a failed exec.)
var selfExe = "/proc/self/exe"

// restoreSecrets, in a re-executed daemon, reads the secret variables
// from the descriptor config.SecretsFDVariable names into the process's
// environment (Go's copy, not the kernel's block) and unsets that
// variable. It returns their names, and whether the daemon was
// re-executed.
func restoreSecrets() ([]string, bool, error) {
	value, ok := os.LookupEnv(config.SecretsFDVariable)
	if !ok {
		return nil, false, nil
	}
	if err := os.Unsetenv(config.SecretsFDVariable); err != nil {
		return nil, true, err
	}
	fd, err := strconv.Atoi(value)
	if err != nil || fd < 3 {
		return nil, true, fmt.Errorf("%s: %q is not a descriptor number", config.SecretsFDVariable, cut(value))
	}
	f := os.NewFile(uintptr(fd), "secrets")
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretsBytes+1))
	if err != nil {
		return nil, true, fmt.Errorf("%s: reading descriptor %d: %w", config.SecretsFDVariable, fd, err)
	}
	var vars map[string]string
	if err := json.Unmarshal(data, &vars); err != nil {
		return nil, true, fmt.Errorf("%s: descriptor %d does not hold the secret variables: %w", config.SecretsFDVariable, fd, err)
	}
	names := slices.Sorted(maps.Keys(vars))
	for _, name := range names {
		if err := os.Setenv(name, vars[name]); err != nil {
			return nil, true, fmt.Errorf("%s: setting %q: %w", config.SecretsFDVariable, cut(name), err)
		}
	}
	return names, true, nil
}

// maxSecretsBytes bounds what the pipe carries: the write happens before
// the exec, with nobody reading yet, so it must fit in the pipe's buffer
// (grown to this size when smaller).
const maxSecretsBytes = 1 << 20

// errNoReexec means the daemon could not re-execute itself; it carries on
// with the secrets in its environment block.
var errNoReexec = errors.New("cannot re-execute")

// hideSecrets re-executes the daemon without the secret variables (names)
// in its environment block, when any is there and it was not re-executed
// already. It returns only if there was nothing to do, or if the exec
// could not happen (then errNoReexec, wrapped) or the values do not fit
// the pipe.
func hideSecrets(names []string, log *zap.Logger) error {
	vars := map[string]string{}
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			vars[name] = v
		}
	}
	if len(vars) == 0 {
		return nil
	}
	data, err := json.Marshal(vars)
	if err != nil {
		return err
	}
	if len(data) > maxSecretsBytes {
		return fmt.Errorf("the secret variables take %d bytes, more than the %d the daemon hands over to its re-executed self", len(data), maxSecretsBytes)
	}
	r, err := newSecretsPipe(len(data))
	if err != nil {
		return err
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, secret := vars[name]; !secret && name != config.SecretsFDVariable {
			env = append(env, kv)
		}
	}
	env = append(env, fmt.Sprintf("%s=%d", config.SecretsFDVariable, r.fd))
	if err := r.write(data); err != nil {
		r.close()
		return err
	}
	log.Debug("re-executing without the secret variables in the environment block", zap.Strings("names", slices.Sorted(maps.Keys(vars))))
	_ = log.Sync()
	err = syscall.Exec(selfExe, os.Args, env)
	// Still here: the exec failed, and nothing was replaced.
	r.close()
	return fmt.Errorf("%w %s: %v", errNoReexec, selfExe, err)
}

// secretsPipe is the pipe that carries the values: fd (read end) stays
// open across the exec, the write end does not.
type secretsPipe struct {
	fd int
	w  *os.File
}

// newSecretsPipe makes the pipe, able to hold size bytes without a reader.
// systemd's sockets (LISTEN_FDS, from descriptor 3 on) are open, so the
// kernel cannot give their numbers to the pipe; the check is cheap.
func newSecretsPipe(size int) (*secretsPipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("making the secrets pipe: %w", err)
	}
	p := &secretsPipe{fd: fds[0], w: os.NewFile(uintptr(fds[1]), "secrets-w")}
	fail := func(err error) (*secretsPipe, error) {
		p.close()
		return nil, err
	}
	if n, err := strconv.Atoi(os.Getenv("LISTEN_FDS")); err == nil && os.Getenv("LISTEN_PID") == strconv.Itoa(os.Getpid()) && fds[0] < 3+n {
		return fail(fmt.Errorf("the secrets pipe got descriptor %d, one of the %d systemd passed", fds[0], n))
	}
	capacity, err := unix.FcntlInt(uintptr(fds[1]), unix.F_GETPIPE_SZ, 0)
	if err == nil && capacity < size {
		capacity, err = unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, size)
	}
	if err != nil || capacity < size {
		return fail(fmt.Errorf("the secret variables take %d bytes, more than the secrets pipe holds (%d): %v", size, capacity, err))
	}
	if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETFD, 0); err != nil {
		return fail(fmt.Errorf("keeping the secrets pipe open across exec: %w", err))
	}
	return p, nil
}

// write writes data and closes the write end, so that the reader gets
// EOF after it.
func (p *secretsPipe) write(data []byte) error {
	_, err := p.w.Write(data)
	if cerr := p.w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the secrets pipe: %w", err)
	}
	return nil
}

func (p *secretsPipe) close() {
	_ = p.w.Close()
	_ = unix.Close(p.fd)
}

// cut shortens a value for an error message.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
