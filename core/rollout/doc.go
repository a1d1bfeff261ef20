// Package rollout is the durable record of threads: one append-only JSONL
// file per thread (event sourcing), the writer that appends to it, the
// reader that rebuilds a thread from it, the store operations on the
// files (find, archive, unarchive, delete, rename, fork) and the index that
// answers thread/list.
//
// # File format
//
// A thread lives in <home>/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<threadId>.jsonl
// (UTC dates). Each line is one record:
//
//	{"timestamp":"2026-11-29T23:01:17.115Z","type":"event_msg","turnId":"…","payload":{…}}
//
// turnId is present on records that belong to a turn. The types are:
//
//   - session_meta: the first line (SessionMeta): id, createdAt, cwd,
//     modelProvider, model, source, originator, cliVersion, git, forkedFromId,
//     ephemeral (always false: ephemeral threads have no file), instructions.
//   - response_item: one model history item, its raw Responses-API JSON
//     exactly as the model saw it.
//   - turn_context: a turn's settings (cwd, model, effort, summary,
//     approvalPolicy, sandbox).
//   - event_msg: a kept core event (see Keeps), tagged by "type":
//     turnStarted, turnComplete, turnAborted, itemStarted, itemCompleted
//     (items tagged userMessage, agentMessage, reasoning, commandExecution,
//     fileChange, plan, dynamicToolCall, contextCompaction), error,
//     tokenCount, contextCompacted. Fields are camelCase.
//   - thread_name {name}, rollback {numTurns}, compacted {message,
//     replacementHistory}: thread-level changes.
//
// Readers skip record and event types they do not know, so later versions
// can add kinds. They also skip damaged lines (a torn last line after a
// crash, a torn line in the middle followed by good ones) with a warning,
// and never refuse a whole thread for them.
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
// SetName, Rollback and Persist return. Write errors keep the records in
// memory and are retried at the next barrier.
//
// # Index
//
// thread/list is answered from an in-memory index of per-file summaries
// (meta, name, preview, turn statuses, last model), cached between runs in
// <home>/rollout-index.v1.gob keyed by path, inode, size and mtime. SQLite
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
