// Package rollout is the durable record of threads: one append-only JSONL
// file per thread (event sourcing), the writer that appends to it, the
// reader that rebuilds a thread from it, the store operations on the
// files (find, archive, unarchive, delete, rename, fork) and the index that
// answers thread/list.
//
// # File format
//
// A thread lives in <home>/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<threadId>.jsonl
// (UTC dates), the layout of the reference (codex), which shares the home:
// each program lists, reads, resumes and forks the other's threads. Each
// line is one record, in the reference's schema (format 2):
//
//	{"timestamp":"2026-11-29T23:01:17.115Z","type":"event_msg","turnId":"…","payload":{"type":"task_started",…}}
//
// turnId is agentd's (the reference ignores it): records of a turn carry
// it, so that rollbacks and forks know their turn without replaying
// boundaries. Payload fields are the reference's (snake_case); fields named
// agentd_* are agentd's, for what the reference's cannot say, and the
// reference ignores them. The types are:
//
//   - session_meta: the first line: id, timestamp, cwd, originator,
//     cli_version, source, model_provider, base_instructions {text}, git
//     {commit_hash, branch, repository_url}, forked_from_id; agentd_format
//     (2), agentd_model, agentd_reasoning_effort, agentd_thread_source,
//     agentd_developer_instructions. No history_mode: the reference reads
//     the turns of such a thread from its events (its "legacy" layout),
//     which is what agentd writes.
//   - turn_context: a turn's settings: turn_id, cwd, approval_policy,
//     sandbox_policy {type, …}, model, effort, summary.
//   - response_item: one model history item, its raw Responses-API JSON
//     exactly as the model saw it.
//   - compacted {message, replacement_history}: the history is replaced.
//   - event_msg, by payload type: task_started, task_complete (error for a
//     failed turn), turn_aborted, error, token_count, user_message,
//     agent_message, agent_reasoning and agent_reasoning_raw_content (one
//     per part), exec_command_begin/end, patch_apply_begin/end,
//     dynamic_tool_call_request/response, item_completed (plans, as a
//     typed Plan item), context_compacted, thread_rolled_back. Messages
//     and reasoning are written once complete; tool calls when they start
//     too, so that a crash leaves them shown (failed).
//
// Names are not in the rollout: like the reference, agentd appends them to
// <home>/session_index.jsonl ({"id","thread_name","updated_at"}; the last
// line of an id wins) and reads the reference's there.
//
// Readers also take the reference's newer layout (history_mode
// "paginated": an ordinal on each record, items as typed item_completed
// events) and agentd's format 1 (its own camelCase events: turnStarted,
// itemCompleted with items, …; thread_name and rollback records), so
// threads written before format 2 keep working. Records that name no turn
// belong to the turn open when they were written, and turns no record
// opened (the reference's oldest files) are rebuilt as the reference
// rebuilds them, with its item and turn names (item-1, rollout-7).
//
// Readers skip record and event types they do not know, so either program
// can add kinds. They also skip damaged lines (a torn last line after a
// crash, a torn line in the middle followed by good ones, a line another
// program wrote badly), never refusing a whole thread for them: reading a
// thread (thread/read, resume) warns of each; the index's summaries for
// thread/list skip them silently.
//
// # Bounded reads
//
// A path to read can come from a client (thread/resume's and
// thread/fork's path), so no read can be turned against the daemon. Only
// regular files are opened, and never in a way that blocks: the type is
// checked, the file opened non-blocking, and the opened file's type
// checked again (a named pipe swapped in meanwhile is refused too). The
// first line must be a session_meta record within MetaLineBytes (1 MiB),
// or the file is not a rollout (ErrNotRollout). Limits cap a line (64 MiB
// by default: ErrLineTooLong) and a file (1 GiB: ErrFileTooLarge); the
// index skips an over-long line instead, as it skips a damaged one. A line
// longer than the read buffer is measured while streaming past it and read
// whole only when within its cap, so memory holds one line, and a line
// over the cap costs none. Every read stops when its context ends (its
// client went away) and once Store.StopReads is called (shutdown).
// Failures are *FileError values: the path apart from the reason, so that
// a server can cut a client's path when it echoes it.
//
// Archived threads move to <home>/archived_sessions/ flat, keeping their
// file name; the name carries the creation date, so unarchiving puts the
// file back in its dated directory.
//
// # Durability
//
// A Recorder's file appears with the thread's first turn (deferred
// materialization: a thread that never runs a turn leaves no file). Records
// are written whole, by one writer goroutine per thread, as soon as it is
// idle and at every Flush; the file is fsynced when a turn ends and before
// Rollback and Persist return. Write errors keep the records in
// memory and are retried at the next barrier. A name is appended to the
// session index and fsynced before SetName returns.
//
// # Index
//
// thread/list is answered from an in-memory index of per-file summaries
// (meta, preview, turn statuses, last model; names come from the session
// index, read again as it grows), cached between runs in
// <home>/rollout-index.v2.gob keyed by path, inode, size and mtime. SQLite
// (modernc.org/sqlite) was considered and not chosen: the files stay the
// only truth either way, so a database would still need the same staleness
// checks against the directory tree, while adding a large dependency, a
// second file format to migrate and WAL files in the user's home. 10,000
// summaries are a few megabytes, and filtering and sorting them in memory
// takes a few milliseconds. Staleness is caught by directory mtimes (files
// added, moved, deleted), by this process's own writes, by re-checking
// files modified in the last two seconds (caught mid-write), and by a
// background re-stat of every file every Options.IndexRevalidate (appends
// by other processes). A grown file is read only from where its last scan
// stopped; a moved file (same inode, size and mtime) is not read again. The
// store builds the index in the background as soon as it is opened.
package rollout
