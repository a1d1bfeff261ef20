// Package demo is agentd's built-in "demo" model: a deterministic, offline
// model that speaks the Responses API over SSE, so that agentd can be tried
// without an API key while still using the real model client.
//
// It reads the conversation the way a model would, from the request's
// input, and answers the last user message:
//
//   - "run: CMD" calls the exec_command tool with {"cmd": CMD}.
//   - "patch: FILE TEXT" calls the apply_patch tool. The first time FILE is
//     patched in a conversation the patch adds FILE with TEXT (apply_patch
//     replaces the file if it already exists); later patches of the same
//     FILE update it, replacing the lines the previous demo patch wrote.
//   - "plan:" followed by one step per line calls update_plan with those
//     steps, the first in progress and the others pending.
//   - anything else gets a short explanation of agentd and these commands.
//
// When the last input item is a tool output, it answers with a short
// message quoting that output. Every response starts with a short
// reasoning summary; token usage counts one token per word.
package demo
