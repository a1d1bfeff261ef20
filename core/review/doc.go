// Package review prepares and reads code reviews: what a review target
// means in a git repository (the diff, computed with git in the thread's
// working directory), the reviewer's instructions and task, and the
// reviewer's answer (structured findings parsed from its JSON, or its
// plain text) rendered for the user.
//
// git runs without a shell, with a minimal environment, no pager, no
// external diff or text conversion drivers and no file system monitor,
// in its own process group (killed at a timeout), and its output is read
// up to a bound: a repository's configuration cannot make it run a
// program of its own, and a huge diff costs no more than the bound.
package review
